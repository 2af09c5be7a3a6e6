"""The table file: 4 SL classes on VL pairs (0,1)..(6,7), VLArb per port role (and one port
override) read back with smpquery; a bad file is rejected whole with file:line."""

from __future__ import annotations

import json

import pytest
from dla_testlib import TABLES_REJECTED, fig8_vl, name_groups, port_kind, run_dla
from ibqos.fabric.dumps import load_dumps
from ibqos.verify import verify_fabric
from ibqos_sim.harness.diags import smpquery_vlarb
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly

pytestmark = pytest.mark.fabric

SL2CLASS = [0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0]
ROLES = {
    "ca": ([(0, 32), (1, 32)], [(2, 8), (3, 8), (4, 8), (5, 8), (6, 8), (7, 8)], 1),
    "sw0": ([(0, 64)], [], 255),
    "terminal": ([(0, 16), (1, 16), (2, 16)], [(3, 8)], 4),
    "local": ([(0, 32), (1, 32)], [(2, 8), (3, 8), (4, 4), (5, 4)], 1),
    "global": ([(0, 40), (1, 40), (2, 20)], [(6, 8), (7, 8)], 2),
}
OVERRIDE = ([(0, 16)], [(2, 16)], 0)


def _list(entries):
    return ",".join(f"{v}:{w}" for v, w in entries) or "-"


def write_tables(path, override_guid=None, extra=""):
    lines = ["# test tables", "version 1", "sl2class " + ",".join(map(str, SL2CLASS))]
    for role, (high, low, limit) in ROLES.items():
        lines.append(f"vlarb {role} high {_list(high)} low {_list(low)} limit {limit}")
    if override_guid is not None:
        high, low, limit = OVERRIDE
        lines.append(f"vlarb port 0x{override_guid:016x} 7 high {_list(high)} low {_list(low)} limit {limit}")
    path.write_text("\n".join(lines) + "\n" + extra)
    return path


def padded(entries, cap):
    return entries + [(0, 0)] * (cap - len(entries))


def test_four_classes_and_vlarb_per_role(tmp_path, ibsim_fabric):
    net = dragonfly(*DRAGONFLY_SIZES[72]).write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        first = load_dumps(run_dla(h).dumps)
        sw0 = next(n for n in first.switches() if n.desc == "sw-g0-s0")
        tables = write_tables(tmp_path / "plan.tables", override_guid=sw0.guid)
        run = run_dla(h, tables=tables)
        assert run.configured_engines() == ["dla"]
        live = h.read_back(save=False)
        groups = name_groups(live)
        record = json.loads((run.dumps / "ibqos-dla.json").read_text())
        assert record["engine"] == {"status": "routed"} and record["ports_complete"]
        assert record["table_file"] == {"status": "applied", "path": str(tables)}
        by_group: dict[int, list[int]] = {}
        for guid, g in groups.items():
            by_group.setdefault(g, []).append(guid)
        assert sorted(sorted(int(g, 16) for g in m) for m in record["groups"]["members"]) == sorted(
            sorted(m) for m in by_group.values()
        )
        recorded = {(int(r["guid"], 16), r["port"]): r for r in record["ports"]}
        # VLArb on every switch port with a link and every CA port, as smpquery reads it, and
        # as the plugin's record says it sent them (VLHighLimit too: ibsim does not store it)
        wrong = []
        for node in live.nodes.values():
            for port in sorted(node.ports):
                if node.kind == "switch":
                    if port == 0:
                        continue  # ibsim switches have a base port 0: no VLArb (BSP0)
                    role = port_kind(live, groups, node.guid, port)
                    if role == "none":
                        continue
                    if node.guid == sw0.guid and port == 7:
                        role = "override"
                    lid = node.lid
                else:
                    role, lid = "ca", node.ports[port].lid
                high, low, _ = OVERRIDE if role == "override" else ROLES[role]
                got = smpquery_vlarb(h, lid, port)
                want = {"high": padded(high, len(got["high"])), "low": padded(low, len(got["low"]))}
                if got != want:
                    wrong.append((node.desc, port, role, got, want))
                r = recorded.pop((node.guid, port), None)
                sent = r and {
                    "high": padded([tuple(e) for e in r["high"]], len(got["high"])),
                    "low": padded([tuple(e) for e in r["low"]], len(got["low"])),
                }
                if sent != got or r["high_limit"] != (OVERRIDE if role == "override" else ROLES[role])[2]:
                    wrong.append((node.desc, port, role, "record", r))
        assert not wrong, wrong[:3]
        assert not recorded, list(recorded)[:3]  # nothing recorded that was not sent

    # SL2VL: class c on (2c, 2c+1), Fig. 8 per class on every switch (in, out) pair
    for sw in live.switches():
        for (inp, out), vls in sw.sl2vl.items():
            ik, ok = port_kind(live, groups, sw.guid, inp), port_kind(live, groups, sw.guid, out)
            if ok == "none":
                continue
            assert list(vls) == [fig8_vl(SL2CLASS[sl], ik, ok) for sl in range(16)], (sw.desc, inp, out)
    for ca in live.cas():
        for vls in ca.sl2vl.values():
            assert list(vls) == [2 * c for c in SL2CLASS]
    for c in range(4):
        report = verify_fabric(live, sl=2 * c)
        assert report.ok, report.defects()
        assert report.vls_used == [2 * c, 2 * c + 1]
        assert max(report.hops) <= 3


@pytest.mark.parametrize(
    "extra,where,message",
    [
        ("vlarb port 0x1 3 high 0:1 low 15:1 limit 1\n", 9, "low: entry 1: VL 15 out of range 0..14"),
        ("vlarb port 0x1 3 high 0:256 low - limit 1\n", 9, "weight 256 out of range 0..255"),
        ("bogus\n", 9, "unknown keyword 'bogus'"),
        (
            "vlarb port 0x1 3 high 0:1,1:1,2:1,3:1,4:1,5:1,6:1,7:1,0:1 low - limit 1\n",
            0,
            "high table has 9 entries but port",
        ),
    ],
)
def test_bad_table_file_rejected_whole(tmp_path, extra, where, message, ibsim_fabric):
    net = dragonfly(*DRAGONFLY_SIZES[72]).write_net(tmp_path / "fabric.net")
    # Debian's ibsim explicitly: its ports hold 8 entries, so a 9-entry table is over capacity
    # (the patched ibsim's 64-entry ports would take it)
    with ibsim_fabric(net, run_dir=tmp_path / "run", ibsim="debian") as h:
        run_dla(h)
        default = smpquery_vlarb(h, 1, 1)
        tables = write_tables(tmp_path / "plan.tables", extra=extra)
        if where == 0:
            # a capacity error needs a real port: give the override to a switch in the fabric
            guid = next(n for n in load_dumps(run_dla(h).dumps).switches()).guid
            tables.write_text(tables.read_text().replace("0x1 3", f"0x{guid:016x} 3"))
        run = run_dla(h, tables=tables, check=False)
        found = [m.group(1) for ln in run.lines() if (m := TABLES_REJECTED.search(ln.text))]
        assert len(found) == 1, found
        assert found[0].startswith(f"{tables}:{where or 9}: "), found[0]
        assert message in found[0]
        record = json.loads((run.dumps / "ibqos-dla.json").read_text())
        assert record["table_file"]["status"] == "rejected"
        assert message in record["table_file"]["reason"] and record["ports"] == []
        if where == 0:
            assert "vlarb port: high table has 9 entries" in found[0]
        # DLA still routes (class 0 everywhere), OpenSM keeps its own VLArb
        assert run.configured_engines() == ["dla"]
        assert smpquery_vlarb(h, 1, 1) == default
        sl2vl = h.diag(["smpquery", "sl2vl", "1", "1"]).stdout
        assert "| 0| 0| 0| 0| 0| 0| 0| 0| 0| 0| 0| 0| 0| 0| 0| 0|" in sl2vl
