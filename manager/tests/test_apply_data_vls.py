"""`apply` holds the plan's data VLs to the ports' VLCap before it writes anything, with the
check the dry run uses (conformance.data_vls_shortfall): a plan for 15 data VLs on ibsim's
ports (VLCap 8) is one line naming the plan file, fabric.data_vls, the ports and their VLCap,
exit 1, and nothing is written or swept (before, OpenSM took the files, the plugin refused
its tables with ERR D1A3, and the apply rolled back after a sweep)."""

from __future__ import annotations

import json

import pytest
from apply_helpers import (
    live_sm,  # noqa: F401 (fixture)
    make_plan_file,
    managed_texts,
    run_apply,
    state_tree,
)
from ibqos.fabric.live import read_live
from ibqos.plan import load_plan
from ibqos_sim.harness.topology import dragonfly

pytestmark = pytest.mark.fabric


def test_a_plan_for_more_data_vls_than_the_ports_run_is_refused_before_anything_is_written(
    ibqos_cli, live_sm, tmp_path
):
    h, sm, _, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    assert run_apply(ibqos_cli, h, sm, path_b).returncode == 0  # ibqos.d/ with a version
    policy = tmp_path / "b.yaml"
    policy.write_text(policy.read_text().replace("data_vls: 8", "data_vls: 15"))
    path_15 = tmp_path / "vl15.plan.json"
    r = ibqos_cli("plan", policy, "-o", path_15)
    assert r.returncode == 0 and load_plan(path_15).fabric.data_vls == 15, r.stderr
    state = sm.conf.parent / "ibqos.d"
    before, texts, sweeps = state_tree(state), managed_texts(sm), sm.record().heavy_sweeps
    linked = sum(1 for n in read_live(h.env).nodes.values() for p in n.ports.values() if p.remote is not None)

    r = run_apply(ibqos_cli, h, sm, path_15)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1, r.stdout + r.stderr
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(
        f"ibqos: error: {path_15}: fabric.data_vls: the plan runs 15 data VLs, {linked} of the fabric's "
        "ports fewer (ca-g0-s0-h0[1] VLCap 8, "
    ), lines[0]
    assert lines[0].endswith("…): lower fabric.data_vls to what every port runs; nothing changed"), lines[0]
    assert state_tree(state) == before and managed_texts(sm) == texts
    assert sm.record().heavy_sweeps == sweeps


def test_status_finds_a_plan_for_more_data_vls_than_the_ports_run(ibqos_cli, live_sm, tmp_path):
    """A plan deployed by other means than apply (or a port replaced since by one with fewer
    VLs): `status --live` names the ports, with the same check apply refuses by."""
    h, _, _, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    policy = tmp_path / "b.yaml"
    policy.write_text(policy.read_text().replace("data_vls: 8", "data_vls: 15"))
    path_15 = tmp_path / "vl15.plan.json"
    assert ibqos_cli("plan", policy, "-o", path_15).returncode == 0
    linked = sorted(
        f"{n.desc}[{p}] VLCap 8"
        for n in read_live(h.env).nodes.values()
        for p, port in n.ports.items()
        if port.remote is not None
    )

    r = ibqos_cli("status", "--live", "--plan", path_15, "--sim-socket", h.sock, "--json")
    assert r.returncode == 1, r.stdout + r.stderr
    found = {f["kind"]: f for f in json.loads(r.stdout)["findings"]}
    assert sorted(found["data-vls"]["ports"]) == linked
    assert found["data-vls"]["message"].startswith(f"the plan runs 15 data VLs, {len(linked)} of the fabric's ports")

    r = ibqos_cli("status", "--live", "--plan", path_b, "--sim-socket", h.sock, "--json")
    assert not {"data-vls", "op-vls"} & {f["kind"] for f in json.loads(r.stdout)["findings"]}


def test_status_names_ports_an_sm_caps_below_the_plans_data_vls(ibqos_cli, ibsim_fabric, tmp_path):
    """An OpenSM whose max_op_vls (a VLCap code) caps the ports at VL0-1 under an 8-VL plan:
    before, status said only what follows (a CA sends an SL on a VL its port does not run),
    never the cause. Now the finding op-vls names the ports and max_op_vls; the ports can run 8
    (VLCap), so data-vls stays silent."""
    _, path_b = make_plan_file(tmp_path, "b", 60)
    net = dragonfly(2, 2, 1, 3).write_net(tmp_path / "df.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        sm = h.start_sm(conf={"max_op_vls": 2})
        try:
            fabric = read_live(h.env)
            r = ibqos_cli("status", "--live", "--plan", path_b, "--sim-socket", h.sock, "--json")
        finally:
            sm.stop()
    linked = sorted(
        f"{n.desc}[{p}] runs 2" for n in fabric.nodes.values() for p, port in n.ports.items() if port.remote
    )
    assert {port.op_vls for n in fabric.nodes.values() for port in n.ports.values() if port.remote} == {2}
    assert r.returncode == 1, r.stdout + r.stderr
    found = {f["kind"]: f for f in json.loads(r.stdout)["findings"]}
    assert "data-vls" not in found
    assert sorted(found["op-vls"]["ports"]) == linked
    assert found["op-vls"]["message"].startswith(f"the plan runs 8 data VLs, {len(linked)} of the fabric's ports")
    assert "max_op_vls, a VLCap code (4 for 8 data VLs)" in found["op-vls"]["message"]
