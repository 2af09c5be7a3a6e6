"""Dragonfly group discovery and port roles against the generator's ground truth."""

from __future__ import annotations

import pytest

from ibqos.fabric.groups import NotADragonfly, dragonfly_groups, port_roles
from ibqos_sim.topology import (DRAGONFLY_SIZES, dragonfly, dragonfly_missing_local_link,
                                dragonfly_unconnected_pair, fat_tree)


def _partition(mapping):
    out = {}
    for k, v in mapping.items():
        out.setdefault(v, set()).add(k)
    return sorted(map(sorted, out.values()))


@pytest.mark.parametrize("size", sorted(DRAGONFLY_SIZES))
def test_groups_match_the_generated_wiring(size):
    topo = dragonfly(*DRAGONFLY_SIZES[size])
    fabric = topo.to_fabric()
    by_name = {n.desc: n.guid for n in fabric.nodes.values()}
    truth = {by_name[s.name]: s.group for s in topo.switches}
    assert _partition(dragonfly_groups(fabric)) == _partition(truth)


def test_roles_follow_the_documented_port_numbering():
    a, p, h = 4, 2, 2
    fabric = dragonfly(a, p, h).to_fabric()
    roles = port_roles(fabric)
    sw = next(n for n in fabric.nodes.values() if n.desc == "sw-g3-s2")
    expect = {**{i: "terminal" for i in range(1, p + 1)},
              **{i: "local" for i in range(p + 1, p + a)},
              **{i: "global" for i in range(p + a, p + a + h)}}
    assert {port: roles[(sw.guid, port)] for port in sw.ports} == expect
    ca = next(n for n in fabric.nodes.values() if n.kind == "ca")
    assert roles[(ca.guid, 1)] == "ca"


@pytest.mark.parametrize("topo, why", [
    (dragonfly_missing_local_link(4, 2, 2), "no clique"),
    (dragonfly_unconnected_pair(4, 2, 2), "not joined by a global link"),
    (fat_tree(), "no clique|not joined"),
])
def test_non_dragonflies_are_refused_with_the_broken_rule(topo, why):
    with pytest.raises(NotADragonfly, match=why):
        dragonfly_groups(topo.to_fabric())
