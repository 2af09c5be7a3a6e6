"""The MTU is part of the plan's truth: every link must run at least the plan's MTU, and the
dry run, `apply` and `status` say which port does not (ibqos.conformance.mtu_findings), on
real OpenSM + ibsim. The patched ibsim runs MTUCap 4096 and stores the NeighborMTU OpenSM
sets; `m=N` on a port's line of the net file lowers that port's MTUCap (docs/ibsim.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from apply_helpers import child_env, live_sm, make_plan_file, managed_texts, run_apply  # noqa: F401
from ibqos.conformance import diff_programmed, expected_from_plan, mtu_findings
from ibqos.fabric.live import read_live
from ibqos.paths import REPO_ROOT
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from ibqos.render import render_plan
from ibqos_sim.harness.ibsim_binary import patched_unavailable
from ibqos_sim.harness.topology import from_spec
from test_dryrun import dryrun

pytestmark = pytest.mark.fabric
EXAMPLES = REPO_ROOT / "examples"
needs_patched = pytest.mark.skipif(patched_unavailable() is not None, reason=f"{patched_unavailable()}")
ONE_SWITCH = "fattree:leaves=1,spines=0,hosts=4"


def net_with_mtu_cap(path: Path, node: str, port: int, code: int) -> Path:
    """The one-switch fabric, with MTUCap `code` (3 = 1024 bytes) on one port of `node`."""
    net = from_spec(ONE_SWITCH).write_net(path)
    text, n = re.subn(
        rf'(\n(?:Hca|Switch)\t\d+ "{node}"\n(?:.*\n)*?\[{port}\]\t"[^"]+"\[\d+\])\n', rf"\1 m={code}\n", net.read_text()
    )
    assert n == 1
    net.write_text(text)
    return net


def _guid(fabric_json: Path, desc: str) -> int:
    doc = json.loads(fabric_json.read_text())
    return next(int(n["guid"], 16) for n in doc["nodes"] if n["desc"] == desc)


@needs_patched
def test_dry_run_and_status_name_the_port_below_the_plans_mtu(ibqos_cli, tmp_path):
    """seed002's policy (MTU 4096) on one switch whose port to ca-l0-h2 can run only 1024:
    OpenSM runs that link at 1024 on both ends, the verdict fails naming both ports, and
    `status` on the run exits 1 with one line per port."""
    net = net_with_mtu_cap(tmp_path / "f.net", "leaf0", 3, 3)
    r = dryrun(ibqos_cli, EXAMPLES / "seed002-config-a.yaml", tmp_path / "run", "--net", str(net), "--ibsim", "patched")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    rep = json.loads((tmp_path / "run" / "report.json").read_text())
    leaf, ca = _guid(tmp_path / "run" / "fabric.json", "leaf0"), _guid(tmp_path / "run" / "fabric.json", "ca-l0-h2")
    assert rep["mtu_below_plan"] == [  # by node GUID
        f"ca-l0-h2 0x{ca:016x} port 1: link MTU 1024, MTUCap 4096, below the plan's MTU 4096",
        f"leaf0 0x{leaf:016x} port 3: link MTU 1024, MTUCap 1024, below the plan's MTU 4096",
    ]
    check = next(c for c in rep["fabric_checks"] if c["check"] == "link MTU ≥ the plan's 4096")
    assert check["ok"] is False and f"leaf0 0x{leaf:016x} port 3" in check["result"]
    assert f"ca-l0-h2 0x{ca:016x} port 1" in check["result"]
    assert not rep["ok"] and "dry run failed: fabric check failed: link MTU ≥ the plan's 4096" in r.stderr
    # every other link runs 4096, and the shares still pass: the MTU alone fails the run
    fabric = json.loads((tmp_path / "run" / "fabric.json").read_text())
    mtus = sorted(p["mtu"] for n in fabric["nodes"] for p in n["ports"] if p["remote"])
    assert mtus == [1024, 1024] + [4096] * 6
    assert all(c["ok"] for c in rep["classes"])

    s = ibqos_cli("status", tmp_path / "run", timeout=120)
    assert s.returncode == 1, s.stdout + s.stderr
    lines = [ln for ln in s.stdout.splitlines() if "below the plan's MTU" in ln]
    assert len(lines) == 2 and f"leaf0 0x{leaf:016x} port 3: link MTU 1024" in lines[1], s.stdout
    assert "status: 2 finding(s): mtu, mtu" in s.stderr


def test_apply_rolls_back_a_plan_whose_mtu_the_links_do_not_run(ibqos_cli, live_sm, tmp_path):
    """Debian's ibsim runs every link at 2048. Plan A (MTU 2048) is in force; plan B is the
    same policy at 4096: apply programs it, reads back, finds every port below 4096 and rolls
    back. `status --live` then exits 0 against A and 1 against B, one line per port."""
    h, sm, plan_a, path_a = live_sm
    text = (tmp_path / "a.yaml").read_text().replace("mtu: 2048", "mtu: 4096")
    (tmp_path / "b.yaml").write_text(text)
    plan_b = make_plan(load_policy(tmp_path / "b.yaml"))
    plan_b.save(tmp_path / "b.plan.json")
    before = managed_texts(sm)
    r = run_apply(ibqos_cli, h, sm, tmp_path / "b.plan.json")
    assert r.returncode == 1, r.stdout + r.stderr
    live = read_live(h.env)
    linked = sum(1 for n in live.nodes.values() for p in n.ports.values() if p.num and p.remote)
    first = mtu_findings(live, 4096)[0]
    assert f"{linked} port(s) run below the plan's MTU, first: {first}" in r.stderr
    assert "rolled back" in r.stderr and "fabric verified as before" in r.stderr and "Traceback" not in r.stderr
    assert managed_texts(sm) == before
    assert diff_programmed(live, expected_from_plan(plan_a)) == [] and mtu_findings(live, 2048) == []

    def status(plan: Path):
        return ibqos_cli(
            "status",
            "--live",
            "--sim-socket",
            h.sock,
            "--osm-log",
            sm.log,
            "--plan",
            plan,
            env=child_env(),
            timeout=300,
        )

    ok = status(path_a)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = status(tmp_path / "b.plan.json")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    lines = [ln for ln in bad.stdout.splitlines() if "below the plan's MTU 4096" in ln]
    assert len(lines) == linked and str(first) in bad.stdout
    # plan B's tables differ too (its weights are for 4096-byte packets): one `tables` finding
    assert ", ".join(["mtu"] * linked) in bad.stderr and bad.stderr.count("mtu") == linked


@needs_patched
def test_sa_path_records_carry_the_plans_mtu(tmp_path, ibsim_fabric):
    """On links running 4096, a plan at 2048 renders mtu-limit 4 in every qos-level, and the
    SA's path record between two CAs says 2048: the links run 4096 (read back), so the 2048 is
    the limit's."""
    policy = tmp_path / "p.yaml"
    policy.write_text((EXAMPLES / "seed002-config-a.yaml").read_text().replace("mtu: 4096", "mtu: 2048"))
    plan = make_plan(load_policy(policy))
    files = render_plan(plan, tmp_path / "cfg")
    assert files["qos-policy.conf"].read_text().count("mtu-limit: 4\n") == 1 + len(plan.classes)
    with ibsim_fabric(
        from_spec(ONE_SWITCH).write_net(tmp_path / "f.net"), run_dir=tmp_path / "run", ibsim="patched"
    ) as h:
        h.start_sm(engine="minhop", conf_files=[files["opensm.conf"]])
        fabric = read_live(h.env)
        assert {p.mtu for n in fabric.nodes.values() for p in n.ports.values() if p.remote} == {4096}
        lids = sorted(n.lid for n in fabric.cas())
        out = h.diag(["saquery", "--src-to-dst", f"{lids[0]}:{lids[1]}"]).stdout
        # selector "exactly" (0x80) with code 4 (2048)
        assert out.count("PathRecord dump") == 1 and re.search(r"\n\s*mtu\.+0x84\n", out), out


def test_a_fabric_json_from_before_mtu_cap_loads_and_is_judged_by_its_mtu(tmp_path):
    """fabric.json files read back before `mtu_cap` existed carry `mtu` (NeighborMTU) but no
    `mtu_cap`: they load with mtu_cap 0, and the check judges their links by `mtu` alone."""
    from ibqos.fabric.model import Fabric, Node, Port

    ca = Node(guid=0x10, kind="ca", desc="ca0", nports=1, ports={1: Port(num=1, guid=0x11, lid=1, remote=(0x20, 1))})
    sw = Node(guid=0x20, kind="switch", desc="sw0", nports=1, ports={0: Port(num=0, guid=0x20, lid=2)})
    sw.ports[1] = Port(num=1, remote=(0x10, 1), mtu=2048)
    ca.ports[1].mtu = 2048
    ca.sl2vl[(0, 1)] = tuple([0] * 16)
    sw.sl2vl = {(i, 1): tuple([0] * 16) for i in (0, 1)}
    sw.lft = [255, 1, 0]
    doc = Fabric(source="live:old", nodes={0x10: ca, 0x20: sw}).to_json()
    for n in doc["nodes"]:
        for p in n["ports"]:
            del p["mtu_cap"]
    (tmp_path / "fabric.json").write_text(json.dumps(doc))
    old = Fabric.load(tmp_path / "fabric.json")
    assert {p.mtu_cap for n in old.nodes.values() for p in n.ports.values()} == {0}
    assert [str(f) for f in mtu_findings(old, 4096)] == [
        "ca0 0x0000000000000010 port 1: link MTU 2048, below the plan's MTU 4096",
        "sw0 0x0000000000000020 port 1: link MTU 2048, below the plan's MTU 4096",
    ]
    assert mtu_findings(old, 2048) == []
