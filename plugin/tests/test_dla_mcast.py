"""OpenSM's multicast trees under dla (issue 25). dla fills OpenSM's hop rows, which only the
multicast manager, the dumps and minhop/updn read, at OSM_EVENT_ID_UCAST_ROUTING_DONE instead
of in its routing hooks (plugin/README.md, "Hop rows"); the multicast manager runs after that
event. Every CA joins the IPoIB broadcast group through the SA (mcast_join.py), and the
multicast forwarding tables OpenSM computes (opensm.mcfdbs) must be
- a tree: the ports set on each switch are the links of one acyclic, connected graph that
  reaches every member, every switch-to-switch link set at both ends, every switch holding a
  port of it on the tree; facts about the tables alone, true whatever engine routed;
- and byte for byte the tables OpenSM computed when dla filled the rows in its routing hook
  (golden/, written by OpenSM with main's plugin at 4b22615), on a dragonfly and a
  dragonfly+, pristine and after a link fault under the running OpenSM."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from dla_testlib import heavy_sweep, start_dla
from ibqos import osmlog
from ibqos.fabric.model import Fabric
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, Topology, dfplus, dragonfly

pytestmark = pytest.mark.fabric

GOLDEN = Path(__file__).parent / "golden"
JOIN = Path(__file__).parent / "mcast_join.py"
BROADCAST_MLID = 0xC000  # OpenSM gives the IPoIB broadcast group the first MLID
_SWITCH = re.compile(r"^Switch 0x([0-9a-f]+)$")
_ROW = re.compile(r"^0x([0-9A-F]{4}) :((?: 0x[0-9A-F]{3} )+)$")
_SM_LID = re.compile(r"sm lid (\d+)")

# name: the fabric, and the switch port whose link fails (a global link of the dragonfly, a
# leaf's link to a spine of the dragonfly+)
CASES: dict[str, tuple[Callable[[], Topology], tuple[str, int]]] = {
    "df72": (lambda: dragonfly(*DRAGONFLY_SIZES[72]), ("sw-g0-s0", 6)),
    "dfplus": (lambda: dfplus(3, 3, 2, 2), ("sw-g0-l0", 3)),
}


def mcast_routes(path: Path) -> dict[int, dict[int, set[int]]]:
    """opensm.mcfdbs: switch GUID -> MLID -> the ports set in its MFT."""
    out: dict[int, dict[int, set[int]]] = {}
    rows: dict[int, set[int]] = {}
    for line in path.read_text().splitlines():
        if m := _SWITCH.match(line):
            rows = out.setdefault(int(m[1], 16), {})
        elif m := _ROW.match(line):
            rows[int(m[1], 16)] = {int(p, 16) for p in m[2].split()}
    return out


def check_tree(fabric: Fabric, routes: dict[int, dict[int, set[int]]], members: set[int], mlid: int) -> None:
    """The MFT ports of mlid are one tree over the switches, reaching every member CA."""
    edges: set[frozenset[tuple[int, int]]] = set()
    nodes: set[int] = set()
    for sw, mlids in routes.items():
        for port in mlids.get(mlid, set()):
            remote = fabric.nodes[sw].ports[port].remote
            assert remote is not None, f"{sw:#x} port {port}: set in the MFT, not linked"
            peer = fabric.nodes[remote[0]]
            if peer.kind == "switch":
                assert remote[1] in routes.get(peer.guid, {}).get(mlid, set()), (
                    f"{sw:#x} port {port}: the link is in the tree at one end only"
                )
            edges.add(frozenset({(sw, port), remote}))
            nodes |= {sw, remote[0]}
    cas = {g for g in nodes if fabric.nodes[g].kind != "switch"}
    assert cas == members, f"MLID {mlid:#x} reaches {len(cas)} of {len(members)} members"
    assert len(edges) == len(nodes) - 1, f"MLID {mlid:#x}: {len(edges)} links over {len(nodes)} nodes: not a tree"
    adjacent: dict[int, set[int]] = {g: set() for g in nodes}
    for (a, _), (b, _) in (tuple(e) for e in edges):
        adjacent[a].add(b)
        adjacent[b].add(a)
    seen, todo = set(), [next(iter(nodes))]
    while todo:
        if (g := todo.pop()) not in seen:
            seen.add(g)
            todo += adjacent[g] - seen
    assert seen == nodes, f"MLID {mlid:#x}: the tree falls apart"


def join_every_ca(h, fabric: Fabric) -> set[int]:
    """Every CA port joins the broadcast group; their node GUIDs."""
    sm_lid = _SM_LID.search(h.diag(["sminfo"]).stdout)
    assert sm_lid, "sminfo named no SM LID"
    ports = {n.guid: p.guid for n in fabric.cas() for p in n.ports.values() if p.guid}
    h.diag([sys.executable, str(JOIN), sm_lid[1], *map(hex, ports.values())])
    return set(ports)


@pytest.mark.parametrize("name", sorted(CASES))
def test_mcast_trees_as_when_dla_filled_hop_rows_in_its_hook(ibsim_fabric, tmp_path, name):
    topo, (node, port) = CASES[name]
    net = topo().write_net(tmp_path / f"{name}.net")
    with ibsim_fabric(net, console=True) as h:
        sm = start_dla(h, conf={"sweep_interval": 0})
        lines = sm.lines()
        configured = [ln.t for ln in lines if "dla tables configured on all switches" in ln.text]
        fills = osmlog.hop_fill_passes(lines)
        # the rows came after the routing window, once, and dla said what they cost
        assert len(fills) == len(configured) == 1 and fills[0][0] >= configured[0]
        fabric = sm.load_dumps(require_sl2vl=False)
        members = join_every_ca(h, fabric)
        for state in ("pristine", "fault"):
            if state == "pristine":
                heavy_sweep(sm)  # the multicast manager's config_all pass after a routing
            else:
                sweep = h.unlink(node, port, sm=sm, timeout=120)
                assert sweep is not None and sweep.engine == "dla", "dla did not route the fault"
            dump = sm.dumps / "opensm.mcfdbs"
            check_tree(sm.load_dumps(require_sl2vl=False), mcast_routes(dump), members, BROADCAST_MLID)
            assert dump.read_text() == (GOLDEN / f"mcfdbs-{name}-{state}.txt").read_text(), state
