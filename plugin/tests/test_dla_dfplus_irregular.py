"""dla on dragonflies+ our generator never draws (dfplus_fabrics.py): groups of different leaf
and spine counts, a group with one spine, spines with spare ports and without global links,
global cables dealt unevenly (two on some spine pairs, none on others), CAs with two ports on
two leaves, leaves without CAs. Real OpenSM + libibqos on ibsim with the chain `ibqos render`
writes, judged by the verifier and ibdmchk.

Routing must depend on the fabric alone: the same fabric with every switch's port numbers
permuted gets the same routes up to the renaming (per switch and destination, the same next
switch or CA; per switch turn, the same VLs), and the same fabric routed twice the same LFTs,
byte for byte. Then faults through ibsim's console (`Unlink`) under a running OpenSM: each is
routed by dla, or refused with one line and routed by the fallback without a credit loop."""

from __future__ import annotations

import re
from itertools import pairwise

import pytest
from dfplus_fabrics import Group, Spec, all_pairs, build, renumbered
from dla_testlib import assert_same_routes, refusals, start_dla
from ibqos.fabric.dla_record import read_record
from ibqos.fabric.dumps import load_dumps
from ibqos.fabric.model import Fabric
from ibqos.render.fallback import DLA_CHAIN, fallback_options
from ibqos.verify import iter_routes, verify_fabric
from ibqos.verify.ibdmchk import run_ibdmchk
from ibqos_sim.campaign import Campaign, link_fault, switch_fault
from ibqos_sim.harness import Harness
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, Topology, dragonfly

pytestmark = pytest.mark.fabric

GROUP_MAP = "ibqos-dla-groups"  # dla_groupmap.h: the map a sweep stores in the run directory
SM_CONF = {"sweep_interval": 1, **fallback_options(8)}
D1A = re.compile(r"ERR D1A\d: dla: (.*)$")

# spine pairs: group 0 spine 0 and group 1 spine 0 carry two cables, group 0 spine 1 has one
# to each of two spines of group 2, group 0 spine 2 and group 2's spine 2 none; every group
# pair keeps at least one cable
UNEVEN = [
    ((0, 0), (1, 0)),
    ((0, 0), (1, 0)),
    ((0, 1), (2, 1)),
    ((0, 1), (2, 0)),
    ((0, 0), (3, 0)),
    ((1, 1), (2, 0)),
    ((1, 1), (3, 1)),
    ((1, 1), (3, 1)),
    ((2, 0), (3, 0)),
]

FABRICS = {
    "uneven-counts": Spec([Group(2, 3), Group(4, 2), Group(3, 4), Group(3, 3)], all_pairs(4, [3, 2, 4, 3])),
    "single-spine": Spec([Group(3, 1), Group(3, 3), Group(3, 2), Group(3, 3)], all_pairs(4, [1, 3, 2, 3])),
    "uneven-globals": Spec([Group(3, 3)] * 4, UNEVEN),
    # spines 1 and 2 of every group have no global link: twins, like the leaves
    "spines-without-globals": Spec([Group(2, 3)] * 3, [((0, 0), (1, 0)), ((0, 0), (2, 0)), ((1, 0), (2, 0))]),
    # group 0's two spines both cabled to spine 0 of groups 1 and 2: twins, like its leaves
    "spines-sharing-remotes": Spec(
        [Group(2, 2)] * 3, [((0, 0), (1, 0)), ((0, 1), (1, 0)), ((0, 0), (2, 0)), ((0, 1), (2, 0)), ((1, 1), (2, 1))]
    ),
    "dual-port-cas": Spec([Group(3, 3)] * 4, all_pairs(4, [3] * 4), dual=[(0, 0, 0, 1), (1, 2, 2, 0)]),
    "hostless-leaves": Spec(
        [Group(3, 3, [2, 0, 2]), Group(3, 3), Group(3, 3, [0, 1, 0]), Group(3, 3)], all_pairs(4, [3] * 4)
    ),
}


def routed(h: Harness, name: str):
    """One `opensm --once` with the chain: (fabric, dumps); dla must have routed it."""
    run = h.run_sm(engine=DLA_CHAIN, plugin=True, conf={"qos": "TRUE", **fallback_options(8)}, name=name)
    assert run.configured_engines() == ["dla"], refusals(run.lines())
    return load_dumps(run.dumps), run.dumps


def judged(tmp_path, topo: Topology, fabric: Fabric, dumps) -> None:
    """Both judges clean, every CA port pair delivered in 2 VLs, minimal routes (CA to CA:
    within a group leaf-spine-leaf, between groups at most 3 switch links, one global)."""
    cas = sum(len(n.links) for n in topo.cas)
    report = verify_fabric(fabric)
    assert report.ok, report.defects()
    assert report.pairs == cas * (cas - 1) == report.delivered
    assert report.cdg_acyclic and report.vls_used == [0, 1]
    chk = run_ibdmchk(dumps, fabric, tmp_path / "ibdmchk")
    assert not chk.credit_loops and "-I- no credit loops found" in chk.output, chk.output[-2000:]
    spec = {n.guid: topo.nodes[n.desc] for n in fabric.switches()}
    for route in iter_routes(fabric):
        sw = [spec[g] for g, _, _, _ in route.hops]
        crossings = sum(a.group != b.group for a, b in pairwise(sw))
        assert crossings <= 1 and len(sw) - 1 <= (3 if crossings else 2), [s.name for s in sw]
    record = read_record(dumps)
    assert record is not None and record.groups is not None
    recorded = sorted(sorted({spec[g].group for g in m}) for m in record.groups.members)
    assert recorded == [[k] for k in range(topo.params["g"])], recorded


def same_up_to_renaming(tmp_path, topo: Topology) -> None:
    """topo routed by dla (judged), twice with the same LFTs, and renumbered with the same routes."""
    net = topo.write_net(tmp_path / "fabric.net")
    with Harness(net, run_dir=tmp_path / "run") as h:
        first, dumps = routed(h, "first")
        judged(tmp_path, topo, first, dumps)
        lfts = (dumps / "opensm-lfts.dump").read_bytes()
        (h.run_dir / GROUP_MAP).unlink()  # the second run discovers the groups afresh
        _, again = routed(h, "again")
        assert (again / "opensm-lfts.dump").read_bytes() == lfts
    other = renumbered(topo, seed=2)
    net = other.write_net(tmp_path / "renumbered.net")
    with Harness(net, run_dir=tmp_path / "run-renumbered") as h:
        second, dumps = routed(h, "renumbered")
        judged(tmp_path, other, second, dumps)
    assert_same_routes(first, second)


@pytest.mark.parametrize("case", list(FABRICS))
def test_irregular_dfplus_is_routed_minimally_whatever_the_port_numbers(tmp_path, case):
    same_up_to_renaming(tmp_path, build(FABRICS[case], case))


def test_dragonfly_routes_do_not_depend_on_port_numbers(tmp_path):
    """The canonical dragonfly too: 42 CAs, several links per group pair (the destination's
    index in its group chooses among them)."""
    topo = dragonfly(*DRAGONFLY_SIZES[42])
    net = topo.write_net(tmp_path / "fabric.net")
    with Harness(net, run_dir=tmp_path / "run") as h:
        first, _ = routed(h, "first")
    net = renumbered(topo, seed=3).write_net(tmp_path / "renumbered.net")
    with Harness(net, run_dir=tmp_path / "run-renumbered") as h:
        second, _ = routed(h, "renumbered")
    assert_same_routes(first, second)


def cable(topo: Topology, a: str, b: str):
    pa, (_, pb) = next((p, peer) for p, peer in sorted(topo.nodes[a].links.items()) if peer[0] == b)
    return link_fault(topo, a, pa, b, pb)


# on uneven-counts, renumbered: group 0 has 2 leaves (a leaf-spine fault there needs a 4th VL:
# plugin/README.md, refused), group 2 has 3 leaves and 4 spines; groups 1 and 2 have one cable
FAULTS = {
    "global link": lambda t: [cable(t, "sw-g1-s1", "sw-g2-s1")],
    "spine": lambda t: [switch_fault(t, "sw-g2-s0")],
    "leaf-spine link": lambda t: [cable(t, "sw-g2-l1", "sw-g2-s2")],
    "leaf-spine link, group of 2 leaves": lambda t: [cable(t, "sw-g0-l1", "sw-g0-s2")],
    "all three": lambda t: [
        cable(t, "sw-g1-s1", "sw-g2-s1"),
        switch_fault(t, "sw-g2-s0"),
        cable(t, "sw-g2-l1", "sw-g2-s2"),
    ],
}


def test_faults_on_an_irregular_dfplus_under_a_running_sm(tmp_path):
    topo = renumbered(build(FABRICS["uneven-counts"], "uneven-counts"), seed=11)
    net = topo.write_net(tmp_path / "fabric.net")
    problems, seen = [], []
    with Harness(net, run_dir=tmp_path / "run", console=True) as h:
        sm = start_dla(h, engine=DLA_CHAIN, conf=SM_CONF)
        try:
            c = Campaign(h, sm, topo, tmp_path)
            assert c.pristine_report.ok and c.pristine_report.vls_used == [0, 1]
            for name, make in FAULTS.items():
                o = c.run(make(topo))
                d, r = o.degraded, o.restored
                said = [m.group(1) for ln in sm.lines() if (m := D1A.search(ln.text))]
                seen.append((name, d.engine, d.vls_used, d.refusals))
                if d.engine != "dla" and len(d.refusals) != 1:
                    problems.append(f"{name}: routed by {d.engine}, dla said {d.refusals}")
                if d.delivered != d.pairs or d.pairs != o.expected_pairs:
                    problems.append(f"{name}: {d.delivered}/{d.pairs} pairs, {o.expected_pairs} expected")
                if not d.cdg_acyclic or d.ibdmchk_loops:
                    problems.append(f"{name}: credit loop under {d.engine}: {d.cycle}")
                if d.engine == "dla" and len(d.vls_used) > 3:
                    problems.append(f"{name}: VLs {d.vls_used}")
                if r is None or r.engine != "dla" or not r.lfts_pristine or r.vls_used != [0, 1]:
                    problems.append(f"{name}: after the repair {r}")
                assert sm.alive(), name
            assert all(s.startswith("fabric refused: ") and "[rule: " in s for s in said), said
        finally:
            sm.stop()
    (tmp_path / "outcomes.txt").write_text("\n".join(map(str, seen)))
    assert not problems, "\n".join(problems) + "\n" + "\n".join(map(str, seen))
    engines = {name: e for name, e, _, _ in seen}
    assert engines["global link"] == engines["spine"] == engines["leaf-spine link"] == "dla", seen
