"""Plan-vs-programmed diff on models built from the generator's wiring."""

from __future__ import annotations

import dataclasses

from ibqos.arbiter import ArbTable
from ibqos.conformance import Expected, diff_programmed
from ibqos.fabric.groups import port_roles
from ibqos_sim.harness.topology import dragonfly

SL2CLASS = [0, 1, 2, 3] * 4
TABLES = {
    "ca": ArbTable([[0, 32], [1, 32]], [[2, 8]], 1),
    "terminal": ArbTable([[0, 16], [1, 16]], [[4, 4], [5, 4]], 2),
    "local": ArbTable([[0, 16], [1, 16]], [[6, 4]], 2),
    "global": ArbTable([[0, 40], [1, 40]], [[2, 8], [3, 8]], 3),
}


def _fig8(sl2class, in_role, out_role, stride=2):
    """Seed 003 Fig. 8, written out here rather than taken from ibqos.conformance: a packet
    moves to its class's second VL on the local hop that follows a global one, and only there."""
    return tuple(stride * c + (1 if (in_role, out_role) == ("global", "local") else 0) for c in sl2class)


def _programmed_as_planned():
    fabric = dragonfly(4, 2, 2).to_fabric()
    roles = port_roles(fabric)
    for n in fabric.nodes.values():
        for p, port in n.ports.items():
            port.op_vls = 8
            t = TABLES.get(roles.get((n.guid, p)))
            if t:
                pad = [(0, 0)] * (8 - len(t.high))
                port.vlarb = ArbTable(list(t.high) + pad, list(t.low) + [(0, 0)] * (8 - len(t.low)), t.limit, 8, 8)
            if n.kind == "ca":
                n.sl2vl[(0, p)] = _fig8(SL2CLASS, None, None)
        if n.kind == "switch":
            for i in n.ports:
                for o in n.ports:
                    if i and o and i != o:
                        n.sl2vl[(i, o)] = _fig8(SL2CLASS, roles[(n.guid, i)], roles[(n.guid, o)])
    return fabric, roles


def test_fabric_programmed_as_planned_has_no_difference():
    fabric, _ = _programmed_as_planned()
    assert diff_programmed(fabric, Expected(SL2CLASS, TABLES, {})) == []


def test_every_kind_of_difference_names_its_port():
    fabric, roles = _programmed_as_planned()
    sw = next(n for n in fabric.nodes.values() if n.desc == "sw-g2-s1")
    glob = next(p for p in sw.ports if roles.get((sw.guid, p)) == "global")
    loc = next(p for p in sw.ports if roles.get((sw.guid, p)) == "local")
    # the Fig. 8 shift missing on one global→local pair
    sw.sl2vl[(glob, loc)] = _fig8(SL2CLASS, None, None)
    sw.ports[glob].vlarb = dataclasses.replace(sw.ports[glob].vlarb, limit=7)
    lo = sw.ports[loc].vlarb
    sw.ports[loc].vlarb = dataclasses.replace(lo, low=((6, 5),) + lo.low[1:])
    diffs = diff_programmed(fabric, Expected(SL2CLASS, TABLES, {}))
    assert len(diffs) == 3, diffs
    assert any(f"sw-g2-s1:{loc} in {glob} (global→local) SL2VL" in d for d in diffs)
    assert any(f"sw-g2-s1:{glob} (global) VLHighLimit 7 planned 3" in d for d in diffs)
    assert any(f"sw-g2-s1:{loc} (local) low 6:5 planned 6:4" in d for d in diffs)


def test_port_override_wins_over_role():
    fabric, _ = _programmed_as_planned()
    sw = next(n for n in fabric.nodes.values() if n.desc == "sw-g0-s0")
    override = ArbTable([[0, 1]], [[2, 1]], 0)
    exp = Expected(SL2CLASS, TABLES, {(sw.guid, 1): override})
    assert any("sw-g0-s0:1 (terminal)" in d for d in diff_programmed(fabric, exp))
    sw.ports[1].vlarb = ArbTable([(0, 1)] + [(0, 0)] * 7, [(2, 1)] + [(0, 0)] * 7, 0, 8, 8)
    assert diff_programmed(fabric, exp) == []


def _links_expected():
    vls = [tuple(3 * c + k for k in range(3)) for c in range(4)]
    return Expected(SL2CLASS, TABLES, {}, class_vls=vls), (lambda c: vls[c])


def test_links_stride_and_the_detour_vl_are_accepted():
    fabric, roles = _programmed_as_planned()
    expected, _ = _links_expected()
    for n in fabric.nodes.values():
        if n.kind == "ca":
            for p in n.ports:
                n.sl2vl[(0, p)] = _fig8(SL2CLASS, None, None, stride=3)
        else:
            for i in n.ports:
                for o in n.ports:
                    if i and o and i != o:
                        n.sl2vl[(i, o)] = _fig8(SL2CLASS, roles[(n.guid, i)], roles[(n.guid, o)], stride=3)
    assert diff_programmed(fabric, expected) == []
    sw = next(n for n in fabric.nodes.values() if n.desc == "sw-g1-s0")
    loc = [p for p in sw.ports if roles.get((sw.guid, p)) == "local"]
    # a detour (dla around a fault) moves every class to its third VL on one pair: accepted
    sw.sl2vl[(loc[0], loc[1])] = tuple(3 * c + 2 for c in SL2CLASS)
    assert diff_programmed(fabric, expected) == []
    # a VL of another class is not
    sw.sl2vl[(loc[0], loc[1])] = tuple(3 * ((c + 1) % 4) for c in SL2CLASS)
    diffs = diff_programmed(fabric, expected)
    assert len(diffs) == 1 and f"sw-g1-s0:{loc[1]} in {loc[0]} (local→local) SL2VL" in diffs[0]
    # the pair stride (2 VLs per class) has no detour VL: any move off the plan is a difference
    pairs, _ = _programmed_as_planned()
    sw = next(n for n in pairs.nodes.values() if n.desc == "sw-g1-s0")
    sw.sl2vl[(loc[0], loc[1])] = tuple(2 * c + 1 for c in SL2CLASS)
    assert len(diff_programmed(pairs, Expected(SL2CLASS, TABLES, {}))) == 1


def test_router_port_is_checked_as_opensm_programs_it():
    """A router's port (dla leaves it to OpenSM): the terminal role's VLArb, which ibqos renders
    as qos_rtr_vlarb_*, and its class's first VL like a CA port (dla's SL2VL hook gives every
    non-switch port level 0). Before, the checker read the router as a switch in no group and
    its port as a global port: a false table finding wherever the global tables differ."""
    from ibqos.fabric.model import Node, Port

    fabric, roles = _programmed_as_planned()
    sw = next(n for n in fabric.nodes.values() if n.desc == "sw-g1-s0")
    free = max(sw.ports) + 1
    sw.nports = free
    t = TABLES["terminal"]
    sw.ports[free] = Port(num=free, remote=(0xEE, 1), op_vls=8, vlarb=sw.ports[1].vlarb)
    for i in sw.ports:
        if i:
            sw.sl2vl[(i, free)] = _fig8(SL2CLASS, roles.get((sw.guid, i)), "terminal")
            sw.sl2vl[(free, i)] = _fig8(SL2CLASS, "terminal", roles.get((sw.guid, i)))
    vlarb = ArbTable(list(t.high) + [(0, 0)] * 6, list(t.low) + [(0, 0)] * 6, t.limit, 8, 8)
    rt = Node(guid=0xEE, kind="router", desc="gw", nports=1)
    rt.ports[1] = Port(num=1, lid=999, remote=(sw.guid, free), op_vls=8, vlarb=vlarb)
    rt.sl2vl[(0, 1)] = _fig8(SL2CLASS, None, None)
    fabric.nodes[rt.guid] = rt
    assert port_roles(fabric)[(rt.guid, 1)] == "terminal"
    assert diff_programmed(fabric, Expected(SL2CLASS, TABLES, {})) == []
    rt.sl2vl[(0, 1)] = _fig8(SL2CLASS, "global", "local")  # the class's second VL: not planned
    assert diff_programmed(fabric, Expected(SL2CLASS, TABLES, {})) == [
        "gw:1 (router) SL2VL 1357135713571357 planned 0246024602460246"
    ]
