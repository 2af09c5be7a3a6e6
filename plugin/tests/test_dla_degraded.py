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


def test_refusal_names_the_first_partitions_turn_and_its_vls(tmp_path, ibsim_fabric):
    """A fresh start on a=3 g=10 missing one global link: the discovered partition needs a
    third VL, so with 2 per class dla refuses, and says so of that partition (it tries other
    degraded partitions first): the turn's ports with their roles in it (the generator's
    wiring says which port is global) and 3 VLs, the count dla routes it with when given 3."""
    topo = dragonfly(3, 2, 3, 10)
    topo.disconnect("sw-g0-s0", 5)  # its first global link, to group 1
    net = topo.write_net(tmp_path / "fabric.net")
    sl2class = "sl2class 0,0,1,1,0,0,0,0,0,0,0,0,0,0,0,0"
    used = {}
    for vls in (2, 3):
        tables = tmp_path / f"vls{vls}.tables"
        tables.write_text(f"version 1\n{sl2class}\nvls_per_class {vls}\n")
        with ibsim_fabric(net, run_dir=tmp_path / f"run{vls}") as h:  # each a fresh start
            run = run_dla(h, tables=tables, check=False)
        lines = run.lines()
        used[vls] = ([int(m.group(1)) for ln in lines if (m := VLS_LINE.search(ln.text))], refusals(lines))
    assert used[3] == ([3], []), used[3]
    found = used[2][1]
    assert len(found) == 1 and used[2][0] == [], used[2]
    turn = r'"(sw-[^"]+)": routes entering on port (\d+) \((\w+)\) and leaving on port (\d+) \((\w+)\)'
    m = re.search(turn, found[0])
    assert m, found[0]
    node = topo.nodes[m.group(1)]
    for port, role in ((int(m.group(2)), m.group(3)), (int(m.group(4)), m.group(5))):
        peer = topo.nodes[node.links[port][0]]
        assert role == ("local" if peer.group == node.group else "global"), (found[0], port, peer.name)
    assert "need 3 VLs per class, but 2 are available" in found[0], found[0]


def test_a_refusal_after_other_partitions_logs_the_first_partitions_note(tmp_path, ibsim_fabric):
    """A fresh start on the 72-CA dragonfly with one group pair unlinked and 2 VLs per class:
    the partition discovery finds needs 3, and none other exists, yet dla tries 8. The refusal
    names the first partition, and the note logged before it is that partition's (groups
    discovered on a degraded fabric); it was the last attempt's, which found none: no note."""
    net = dragonfly_unconnected_pair(4, 2, 2).write_net(tmp_path / "fabric.net")
    tables = tmp_path / "vls2.tables"
    tables.write_text("version 1\nsl2class 0,0,1,1,0,0,0,0,0,0,0,0,0,0,0,0\nvls_per_class 2\n")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        run = run_dla(h, tables=tables, check=False)
    lines = run.lines()
    [refusal] = refusals(lines)
    assert "need 3 VLs per class, but 2 are available" in refusal, refusal
    notes = [ln.text for ln in lines if "dla: no stored group map fits" in ln.text]
    assert notes and "(none stored); groups discovered on a degraded fabric" in notes[-1], notes
