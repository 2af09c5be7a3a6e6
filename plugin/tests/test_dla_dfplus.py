"""dla on dragonflies+ (each group a two-level leaf/spine fat tree, globals from the spines):
real OpenSM + libibqos on ibsim, judged from the dumps by the verifier and by ibdmchk; the
groups dla records are the generator's, and the checker's own discovery agrees with them."""

from __future__ import annotations

import re
from itertools import pairwise

import pytest
from dla_testlib import refusals, run_dla
from ibqos.fabric.dla_record import read_record
from ibqos.fabric.dumps import load_dumps
from ibqos.fabric.groups import find_groups, switch_roles
from ibqos.verify import iter_routes, verify_fabric
from ibqos.verify.ibdmchk import run_ibdmchk
from ibqos_sim.harness import Harness
from ibqos_sim.harness.topology import Topology, dfplus
from ibqos_sim.harness.wiring import uneven_leaf_hosts, wired_dfplus

pytestmark = pytest.mark.fabric

LINK_LINE = re.compile(r"dla: global link .* \(group (\d+) -> (\d+)\): (\d+) routes, (\d+) LIDs")


def judged(tmp_path, topo: Topology, *, vls: int = 2):
    """Route topo with dla on real OpenSM; both judges clean, every CA pair delivered within
    `vls` VLs. Returns (fabric, log lines)."""
    net = topo.write_net(tmp_path / "fabric.net")
    with Harness(net, run_dir=tmp_path / "run") as h:
        run = run_dla(h)
        fabric = load_dumps(run.dumps)
    lines = run.lines()
    assert run.configured_engines() == ["dla"], refusals(lines)
    report = verify_fabric(fabric)
    n = len(topo.cas)
    assert report.ok, report.defects()
    assert report.pairs == n * (n - 1) and report.delivered == report.pairs
    assert report.cdg_acyclic
    assert report.vls_used == list(range(len(report.vls_used))) and len(report.vls_used) <= vls
    chk = run_ibdmchk(run.dumps, fabric, tmp_path / "ibdmchk")
    assert not chk.credit_loops, chk.output[-2000:]
    assert "-I- no credit loops found" in chk.output
    # dla's groups are the generator's, and the checker's discovery finds the same
    by_guid = {n.guid: topo.nodes[n.desc] for n in fabric.switches()}
    record = read_record(run.dumps)
    assert record is not None and record.groups is not None
    members = record.groups.members
    recorded = sorted(sorted(by_guid[g].group for g in m) for m in members)
    assert all(len(set(m)) == 1 for m in recorded), recorded
    assert len(recorded) == topo.params["g"]
    part = find_groups(fabric)
    assert {frozenset(g for g, k in part.groups.items() if k == x) for x in set(part.groups.values())} == {
        frozenset(m) for m in members
    }
    assert switch_roles(fabric, part.groups) == {g: s.role for g, s in by_guid.items()}
    return fabric, lines


@pytest.mark.parametrize("shape", [(3, 3, 2, 2), (4, 4, 4, 2)], ids=["dfp42", "dfp144"])
def test_dla_routes_pristine_dfplus_in_2_vls(tmp_path, shape):
    topo = dfplus(*shape)
    fabric, lines = judged(tmp_path, topo)
    by_guid = {n.guid: topo.nodes[n.desc] for n in fabric.switches()}
    # leaf, spine, global, spine, leaf: at most 3 switch-to-switch links, at most one global
    for route in iter_routes(fabric):
        sw = [by_guid[g] for g, _, _, _ in route.hops]
        assert len(sw) - 1 <= 3, [s.name for s in sw]
        assert sum(a.group != b.group for a, b in pairwise(sw)) <= 1
        assert sw[0].role == sw[-1].role == "leaf"
    # routes spread over the spines' global links: every ordered group pair, max vs mean
    counts = [int(m.group(3)) for ln in lines if (m := LINK_LINE.search(ln.text))]
    g = topo.params["g"]
    assert len(counts) == g * (g - 1)
    mean = sum(counts) / len(counts)
    print(f"{topo.name}: routes per global link max {max(counts)} mean {mean:.1f}")
    assert max(counts) <= 1.5 * mean


@pytest.mark.parametrize(
    "name, topo",
    [
        ("shuffled ports", lambda: wired_dfplus(3, 3, 2, 2, seed=5, shuffle=True)),
        ("uneven hosts", lambda: wired_dfplus(3, 3, 2, 2, hosts=uneven_leaf_hosts(3, 7, 2, seed=2))),
        ("several globals per group pair", lambda: dfplus(3, 3, 2, 2, 5)),
    ],
)
def test_dla_routes_dfplus_wirings_the_generator_does_not_draw(tmp_path, name, topo):
    judged(tmp_path, topo())


def test_dla_routes_dfplus_missing_a_spine_within_3_vls(tmp_path):
    """A spine never installed: its group pairs go through a third group (a VL shift)."""
    judged(tmp_path, wired_dfplus(3, 3, 2, 2, missing_spine=(1, 2)), vls=3)


def test_dla_routes_dfplus_on_pinned_groups(tmp_path, ibsim_fabric):
    """Pins work as for dragonflies: a group_pattern naming the racks is used as such."""
    topo = dfplus(3, 3, 2, 2)
    net = topo.write_net(tmp_path / "fabric.net")
    tables = tmp_path / "plan.tables"
    tables.write_text("version 1\n" r"group_pattern ^sw-g(?<group>\d+)-[ls]\d+$" "\n")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        run = run_dla(h, tables=tables)
        fabric = load_dumps(run.dumps)
    assert run.configured_engines() == ["dla"]
    assert any("dla: 7 groups (pinned by the table file)" in ln.text for ln in run.lines())
    assert not any("ERR D1A" in ln.text for ln in run.lines())
    report = verify_fabric(fabric)
    assert report.ok and report.cdg_acyclic and report.vls_used == [0, 1], report.defects()
