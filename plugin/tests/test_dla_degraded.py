"""A fresh OpenSM start (no stored group map, as a standby SM taking over) on a degraded
dragonfly: dla discovers the groups anyway and routes deadlock-free, judged by the verifier and
by ibdmchk; and the map it stores on a healthy fabric keeps its groups through a fault."""

from __future__ import annotations

import re

import pytest
from dla_testlib import refusals, run_dla
from ibqos.fabric.dumps import load_dumps
from ibqos.verify import verify_fabric
from ibqos.verify.ibdmchk import run_ibdmchk
from ibqos_sim.harness.topology import (
    DRAGONFLY_SIZES,
    Topology,
    dragonfly,
    dragonfly_missing_local_link,
    dragonfly_unconnected_pair,
)

pytestmark = pytest.mark.fabric

GROUPS_LINE = re.compile(r"dla: (\d+) groups \(([^)]*)\)")
VLS_LINE = re.compile(r"dla: (\d+) VL\(s\) per class in use")


def without_switch(topo: Topology, name: str) -> Topology:
    """The fabric with switch `name` and its CAs gone, as OpenSM sees a dead switch."""
    gone = {name} | {peer for peer, _ in topo.nodes[name].links.values() if topo.nodes[peer].kind == "Hca"}
    for node in gone:
        for port in list(topo.nodes[node].links):
            topo.disconnect(node, port)
    for node in gone:
        del topo.nodes[node]
    topo.name += f"-no-{name}"
    return topo


CASES = {
    "global_link": (lambda: dragonfly_unconnected_pair(4, 2, 2), 72),
    "switch": (lambda: without_switch(dragonfly(*DRAGONFLY_SIZES[72]), "sw-g3-s1"), 70),
    "local_link": (lambda: dragonfly_missing_local_link(4, 2, 2), 72),
}


def judge(tmp_path, run, cas: int) -> None:
    fabric = load_dumps(run.dumps)
    report = verify_fabric(fabric)
    assert report.ok, report.defects()
    assert report.pairs == cas * (cas - 1) == report.delivered
    assert report.cdg_acyclic
    assert set(report.vls_used) <= {0, 1, 2}
    chk = run_ibdmchk(run.dumps, fabric, tmp_path / "ibdmchk")
    assert not chk.credit_loops, chk.output[-2000:]
    assert "-I- no credit loops found" in chk.output


@pytest.mark.parametrize("case", sorted(CASES))
def test_fresh_start_on_degraded_fabric_is_routed(tmp_path, case, ibsim_fabric):
    make, cas = CASES[case]
    net = make().write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        assert not (h.run_dir / "ibqos-dla-groups").exists()
        run = run_dla(h)
    lines = run.lines()
    assert not refusals(lines)
    assert run.configured_engines() == ["dla"]
    sources = [m.group(2) for ln in lines if (m := GROUPS_LINE.search(ln.text))]
    assert sources and sources[-1].startswith("discovered, fabric degraded"), sources
    judge(tmp_path, run, cas)


def test_stored_map_keeps_groups_through_a_fault(tmp_path, ibsim_fabric):
    """A healthy sweep stores the groups; the next start on a fabric missing a local link
    routes on that map and says so."""
    topo = dragonfly(*DRAGONFLY_SIZES[72])
    healthy = topo.write_net(tmp_path / "healthy.net")
    with ibsim_fabric(healthy, run_dir=tmp_path / "run") as h:
        run_dla(h)
        stored = (h.run_dir / "ibqos-dla-groups").read_text()
    assert len(re.findall(r"^0x[0-9a-f]{16} \d+$", stored, re.M)) == 36
    degraded = dragonfly_missing_local_link(4, 2, 2).write_net(tmp_path / "degraded.net")
    with ibsim_fabric(degraded, run_dir=tmp_path / "run") as h:
        run = run_dla(h)
    lines = run.lines()
    sources = [m.group(2) for ln in lines if (m := GROUPS_LINE.search(ln.text))]
    assert sources[-1] == "stored map, fabric degraded", sources
    assert any(
        "the fabric is degraded (stored group map: group 0 (4 switches) is not a clique" in ln.text for ln in lines
    )
    judge(tmp_path, run, 72)
