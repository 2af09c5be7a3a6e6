"""The hop rows dla leaves in OpenSM (issue 25): a row per switch LID on every switch, an end
port's row only where opensm.fdbs needs it (plugin/README.md, "Hop rows"). What OpenSM reads
from them must be what it read when dla filled a row for every LID:
- opensm.fdbs (dump_ucast_routes; ibdmchk reads it): every routed LID's out port, hop count
  and "yes", the hop count checked against a walk of the LFTs done here;
- the switch LIDs' rows (multicast trees: osm_switch_recommend_mcast_path and
  osm_switch_get_port_least_hops read only these), as opensm-lid-matrix.dump prints them: the
  LFT port holds the walk's hop count, port 0 the same (the least), every other port none.
Pristine, after a global and a local link fault under a running OpenSM (the re-sweep reuses
the first sweep's rows), and on a dragonfly+, where destinations behind one switch leave a
source by different ports; written after the routing (docs/hop-rows.md), or in the routing
hook when OpenSM runs a console."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from dla_testlib import run_dla, start_dla
from ibqos import osmlog
from ibqos.fabric.dumps import load_dumps
from ibqos.fabric.model import Fabric
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dfplus, dragonfly

pytestmark = pytest.mark.fabric

NO_HOPS = 0xFF  # OSM_NO_PATH in a hop row
_FDBS_SWITCH = re.compile(r"dump_ucast_routes: Switch 0x([0-9a-f]+)$")
_FDBS_ROW = re.compile(r"0x([0-9A-F]{4}) : (.*)$")
_MATRIX_SWITCH = re.compile(r"Switch: guid 0x([0-9a-f]+)$")
_MATRIX_ROW = re.compile(r"0x([0-9a-f]{4}):((?: [0-9a-f]{2})+)(?: # portguid 0x[0-9a-f]+)?$")


def walk(fabric: Fabric, guid: int, lid: int) -> int:
    """Links from switch `guid` to `lid` along the LFTs: switch to switch, plus the last one
    to an end port."""
    node, hops = fabric.nodes[guid], 0
    while (port := node.route(lid)) != 0:
        remote = node.ports[port].remote
        assert remote is not None and hops < 64, f"{guid:#x} -> {lid}: the LFTs lead nowhere"
        node, hops = fabric.nodes[remote[0]], hops + 1
        if node.kind != "switch":
            assert node.ports[remote[1]].lid == lid, f"{guid:#x} -> {lid}: delivered to the wrong port"
            return hops
    return hops


def per_switch(path: Path, head: re.Pattern[str], row: re.Pattern[str]) -> dict[int, dict[int, str]]:
    out: dict[int, dict[int, str]] = {}
    rows: dict[int, str] = {}
    for line in path.read_text().splitlines():
        if m := head.match(line):
            rows = out.setdefault(int(m[1], 16), {})
        elif m := row.match(line):
            rows[int(m[1], 16)] = m[2]
    return out


def check_hop_rows(dumps: Path) -> set[int]:
    """Assert the two dumps above against the LFTs; the end-port LIDs that have a row."""
    fabric = load_dumps(dumps, require_sl2vl=False)
    switch_lids = {n.lid for n in fabric.switches()}
    fdbs = per_switch(dumps / "opensm.fdbs", _FDBS_SWITCH, _FDBS_ROW)
    matrix = per_switch(dumps / "opensm-lid-matrix.dump", _MATRIX_SWITCH, _MATRIX_ROW)
    endport_rows: set[int] = set()
    routed = 0
    for sw in fabric.switches():
        for lid, owner in sorted(fabric.lid_map().items()):
            port = sw.route(lid)
            if port == 0xFF:
                continue
            routed += 1
            hops = walk(fabric, sw.guid, lid)
            assert fdbs[sw.guid][lid] == f"{port:03d}  : {hops:02d}   : yes", (sw.desc, lid, owner)
            row = matrix[sw.guid].get(lid)
            if lid not in switch_lids:
                if row is not None:
                    endport_rows.add(lid)
                continue
            assert row is not None, f"{sw.desc}: no hop row for switch LID {lid}"
            got = [int(x, 16) for x in row.split()]
            want = [NO_HOPS] * len(got)
            want[0] = want[port] = hops
            assert got == want, (sw.desc, lid)
    assert routed == len(fabric.lid_map()) * sum(1 for _ in fabric.switches())  # all routed
    return endport_rows


def test_hop_rows_on_a_dragonfly_pristine_and_after_link_faults(ibsim_fabric, tmp_path):
    net = dragonfly(*DRAGONFLY_SIZES[72]).write_net(tmp_path / "df72.net")  # one link per group pair
    with ibsim_fabric(net, console=True) as h:
        sm = start_dla(h, conf={"sweep_interval": 1})
        # the CAs behind a switch are routed as the switch: the first sweep sets no end-port row
        assert check_hop_rows(sm.dumps) == set()
        for port, kind in ((6, "global"), (3, "local")):  # sw-g0-s0: ports 3-5 local, 6-7 global
            sweep = h.unlink("sw-g0-s0", port, sm=sm, timeout=120)
            assert sweep is not None and sweep.engine == "dla", f"{kind} link down: dla did not route"
            check_hop_rows(sm.dumps)
            h.relink("sw-g0-s0", port, sm=sm, timeout=120)


def test_hop_rows_on_a_dragonfly_plus(ibsim_fabric, tmp_path):
    net = dfplus(3, 3, 2, 2).write_net(tmp_path / "dfp.net")
    with ibsim_fabric(net) as h:
        run = run_dla(h)
        # leaves reach the CAs of one leaf through different spines: those rows are needed
        assert check_hop_rows(run.dumps)


def test_hop_rows_in_the_routing_hook_with_a_console(ibsim_fabric, tmp_path):
    """With OpenSM's console on, its reroute command can route where UCAST_ROUTING_DONE may not
    follow (docs/hop-rows.md): dla writes the rows in its routing hook, as before. (--once
    starts no console thread: the option alone is what dla reads.)"""
    net = dragonfly(*DRAGONFLY_SIZES[72]).write_net(tmp_path / "df72.net")
    with ibsim_fabric(net) as h:
        run = run_dla(h, conf={"console": "local"})
        lines = run.lines()
        assert any("dla: writing LFTs and hop tables took" in ln.text for ln in lines)
        assert not osmlog.hop_fill_passes(lines)
        assert check_hop_rows(run.dumps) == set()
