"""The live reader against OpenSM's dumps and against infiniband-diags, on a real ibsim fabric.

OpenSM is told distinct SL2VL / VLArb / VLHighLimit values for CA ports and switch external
ports, with an asymmetric SL2VL, so a swapped nibble, entry or port kind shows up.
"""

from __future__ import annotations

import re

import pytest
from ibqos.errors import ExternalError
from ibqos.fabric.compare import diff
from ibqos.fabric.dumps import load_dumps
from ibqos.fabric.live import read_live
from ibqos_sim.harness import Harness
from ibqos_sim.harness.diags import smpquery_portinfo, smpquery_sl2vl, smpquery_vlarb
from ibqos_sim.harness.topology import dragonfly

pytestmark = pytest.mark.fabric

SWE_SL2VL = (7, 6, 5, 4, 3, 2, 1, 0, 0, 1, 2, 3, 4, 5, 6, 7)
CA_SL2VL = (1, 2, 3, 4, 5, 6, 7, 0, 3, 3, 2, 2, 1, 1, 0, 0)
SWE_LOW = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (7, 8)]
SWE_HIGH = [(7, 32), (6, 16)]
CA_LOW = [(3, 9), (2, 8), (1, 7), (0, 6)]
CA_HIGH = [(5, 64)]


def _arb(entries) -> str:
    return ",".join(f"{vl}:{w}" for vl, w in entries)


QOS = {
    "qos": "TRUE",
    "qos_max_vls": "8",
    "qos_swe_sl2vl": ",".join(map(str, SWE_SL2VL)),
    "qos_ca_sl2vl": ",".join(map(str, CA_SL2VL)),
    "qos_swe_vlarb_low": _arb(SWE_LOW),
    "qos_swe_vlarb_high": _arb(SWE_HIGH),
    "qos_ca_vlarb_low": _arb(CA_LOW),
    "qos_ca_vlarb_high": _arb(CA_HIGH),
    "qos_swe_high_limit": "3",
    "qos_ca_high_limit": "10",
}


@pytest.fixture(scope="module")
def df72(tmp_path_factory):
    d = tmp_path_factory.mktemp("df72")
    net = dragonfly(4, 2, 2).write_net(d / "fabric.net")
    with Harness(net, run_dir=d, console=False) as h:
        run = h.run_sm(engine="minhop", conf=QOS, plugin=False, timeout=300)
        yield h, read_live(h.env, timeout=120), load_dumps(run.dumps)


def test_live_model_equals_the_dumps(df72):
    _, live, dumps = df72
    assert diff(live, dumps, vlarb=False) == []
    assert live.source.startswith("live:ibsim:") and dumps.source.startswith("dumps:")
    assert sum(len(n.sl2vl) for n in live.nodes.values()) == 72 + 36 * 8 * 7


def test_live_tables_are_what_opensm_was_told(df72):
    h, live, _ = df72
    # The fixture's ibsim is IBQOS_IBSIM's (Debian's by default). Debian's ibsim 0.10 has 8-entry
    # tables and drops VLHighLimit from a PortInfo Set (sim_mad.c do_portinfo): its ports read 0,
    # whatever qos_*_high_limit said. The patched one holds 64 entries and keeps the limit.
    patched = h.binary.kind == "patched"
    cap = 64 if patched else 8
    for n in live.nodes.values():
        for p in n.ports.values():
            if p.num == 0:
                assert p.vlarb is None and n.kind == "switch"
                continue
            assert (p.op_vls, p.vl_cap, p.mtu) == (8, 8, 2048)
            a = p.vlarb
            low, high = (SWE_LOW, SWE_HIGH) if n.kind == "switch" else (CA_LOW, CA_HIGH)
            limit = int(QOS["qos_swe_high_limit" if n.kind == "switch" else "qos_ca_high_limit"]) if patched else 0
            assert (a.low_cap, a.high_cap, a.limit) == (cap, cap, limit)
            assert list(a.low[: len(low)]) == low and all(w == 0 for _, w in a.low[len(low) :])
            assert list(a.high[: len(high)]) == high and all(w == 0 for _, w in a.high[len(high) :])
        want = SWE_SL2VL if n.kind == "switch" else CA_SL2VL
        assert set(n.sl2vl.values()) == {want}


# ---- infiniband-diags cross-checks --------------------------------------------------------

_SW = re.compile(r'^Switch\s+(\d+)\s+"S-([0-9a-f]+)"\s+# "(.*)" .*base port 0 lid (\d+) lmc (\d+)')
_SW_PORT = re.compile(r'^\[(\d+)\]\s+"[SH]-([0-9a-f]+)"\[(\d+)\]')
_CA = re.compile(r'^Ca\s+(\d+)\s+"H-([0-9a-f]+)"\s+# "(.*)"')
_CA_PORT = re.compile(r'^\[(\d+)\]\(([0-9a-f]+)\)\s+"S-([0-9a-f]+)"\[(\d+)\]\s+# lid (\d+) lmc (\d+)')


def _ibnetdiscover(h):
    nodes, links, ports = {}, set(), {}
    guid = None
    for line in h.diag(["ibnetdiscover"]).stdout.splitlines():
        if m := _SW.match(line):
            guid = int(m[2], 16)
            nodes[guid] = ("switch", m[3], int(m[1]))
            ports[(guid, 0)] = (guid, int(m[4]), int(m[5]))  # switch port GUID = node GUID here
        elif m := _CA.match(line):
            guid = int(m[2], 16)
            nodes[guid] = ("ca", m[3], int(m[1]))
        elif m := _CA_PORT.match(line):
            links.add((guid, int(m[1]), int(m[3], 16), int(m[4])))
            ports[(guid, int(m[1]))] = (int(m[2], 16), int(m[5]), int(m[6]))
        elif m := _SW_PORT.match(line):
            links.add((guid, int(m[1]), int(m[2], 16), int(m[3])))
    return nodes, links, ports


def test_topology_and_lids_agree_with_ibnetdiscover(df72):
    h, live, _ = df72
    nodes, links, ports = _ibnetdiscover(h)
    assert {g: (n.kind, n.desc, n.nports) for g, n in live.nodes.items()} == nodes
    assert {(g, p.num, *p.remote) for g, n in live.nodes.items() for p in n.ports.values() if p.remote} == links
    assert {
        (g, p.num): (p.guid, p.lid, p.lmc) for g, n in live.nodes.items() for p in n.ports.values() if p.lid
    } == ports


def _spots(live):
    """A few switches and CAs spread over the fabric, with a host and a global port each."""
    sws = sorted(live.switches(), key=lambda n: n.guid)
    cas = sorted(live.cas(), key=lambda n: n.guid)
    return [sws[0], sws[len(sws) // 2], sws[-1]], [cas[1], cas[-1]]


def test_lft_agrees_with_ibroute(df72):
    h, live, _ = df72
    for sw in _spots(live)[0]:
        out = h.diag(["ibroute", str(sw.lid)]).stdout
        routes = {int(m[1], 16): int(m[2]) for m in re.finditer(r"^0x([0-9a-f]+) (\d+) :", out, re.M)}
        assert len(routes) == 72 + 36
        assert routes == {lid: port for lid, port in enumerate(sw.lft) if port != 255}


def test_sl2vl_vlarb_and_portinfo_agree_with_smpquery(df72):
    h, live, _ = df72
    sws, cas = _spots(live)
    checked = 0
    for n in sws + cas:
        nums = [1, n.nports] if n.kind == "switch" else [1]  # a host port, a global port
        for num in nums:
            p = n.ports[num]
            rows = smpquery_sl2vl(h, n.lid, num)
            if n.kind == "switch":
                assert rows == {i: v for (i, o), v in n.sl2vl.items() if o == num}
            else:
                assert rows == {0: n.sl2vl[(0, num)]}
            arb = smpquery_vlarb(h, n.lid, num)
            assert (list(arb["low"]), list(arb["high"])) == (list(p.vlarb.low), list(p.vlarb.high))
            field = smpquery_portinfo(h, n.lid, num)
            assert int(field["VLHighLimit"]) == p.vlarb.limit
            assert field["OperVLs"] == f"VL0-{p.op_vls - 1}" and field["LinkWidthActive"] == p.width
            checked += 1
    assert checked == 3 * 2 + 2


# ---- failure and LMC --------------------------------------------------------------------


def test_dead_fabric_gives_one_clear_error(tmp_path, ibsim_fabric):
    net = dragonfly(2, 1, 1).write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path, console=False) as h:
        env = h.env
        h.ibsim.stop()
        with pytest.raises(ExternalError) as e:
            read_live(env, timeout=30)
    msg = str(e.value)
    assert "\n" not in msg and f"no ibsim listens on IBSIM_SOCKNAME={env['IBSIM_SOCKNAME']}" in msg


def test_missing_reader_names_the_make_target(tmp_path, monkeypatch):
    monkeypatch.setenv("IBQOS_BUILD_DIR", str(tmp_path))
    with pytest.raises(ExternalError, match="ibqos-readback is missing: run 'make build' first"):
        read_live({})


def test_lmc_agrees_between_reader_and_dumps(tmp_path, ibsim_fabric):
    net = dragonfly(2, 1, 1).write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path, console=False) as h:
        run = h.run_sm(engine="minhop", conf={"qos": "TRUE", "lmc": "1"}, plugin=False, timeout=120)
        live = read_live(h.env, timeout=60)
    dumps = load_dumps(run.dumps)
    assert diff(live, dumps, vlarb=False) == []
    assert {p.lmc for n in live.cas() for p in n.ports.values()} == {1}
    assert len(live.lid_map()) == 2 * sum(1 for _ in live.cas()) + sum(1 for _ in live.switches())


def test_the_c_writers_output_validates_against_the_fabric_schema(df72, tmp_path):
    """manager/readback/src/model_json.c and the pydantic Fabric agree on one document:
    the reader's raw output is valid under docs/fabric.schema.json, and loads."""
    import json
    import subprocess

    import jsonschema
    from ibqos.fabric.live import reader_path
    from ibqos.fabric.model import Fabric
    from ibqos.paths import REPO_ROOT

    h, live, _ = df72
    cp = subprocess.run(
        [str(reader_path())], env=h.env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True
    )
    doc = json.loads(cp.stdout)
    schema = json.loads((REPO_ROOT / "docs" / "fabric.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    assert any(p["vlarb"] for n in doc["nodes"] for p in n["ports"])  # the VLArb branch was checked
    loaded = Fabric.from_json(cp.stdout)
    loaded.pad_lfts()
    assert diff(loaded, live) == []
    doc["nodes"][0]["ports"][0]["lid"] = -1  # the schema is not vacuous on this document
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(doc)


# NodeDescription is UTF-8 (IBA 14.2.5.2); ibsim keeps 63 bytes of it, so the long one ends
# in the first byte of an 'é'
DESCS = {"sw0": 'r\u00e4ck "1" \u2013 sw {0}', "sw1": "x" * 62 + "\u00e9\u00e9", "h0": "h\u00f6st \U0001f600 0"}


def test_node_descriptions_are_read_as_utf8(tmp_path, ibsim_fabric):
    """Read back as the switch reports them, decoded as UTF-8 with invalid bytes replaced (as
    the dump loader decodes them); before, every byte above 0x7e became its own character
    ('rÃ¤ck')."""
    net = tmp_path / "fabric.net"
    net.write_text(
        f'Hca\t1 "h0" # {DESCS["h0"]}\n[1]\t"sw0"[1]\n\n'
        f'Switch\t8 "sw0" # {DESCS["sw0"]}\n[1]\t"h0"[1]\n[2]\t"h1"[1]\n[8]\t"sw1"[8]\n\n'
        f'Switch\t8 "sw1" # {DESCS["sw1"]}\n[8]\t"sw0"[8]\n\n'
        'Hca\t1 "h1"\n[1]\t"sw0"[2]\n',
        encoding="utf-8",
    )
    with ibsim_fabric(net, run_dir=tmp_path, console=False) as h:
        h.run_sm(engine="minhop", plugin=False, timeout=120)
        live = read_live(h.env, timeout=60)
    got = sorted(n.desc for n in live.nodes.values())
    want = sorted([*(d.encode()[:63].decode("utf-8", errors="replace") for d in DESCS.values()), "h1"])
    assert got == want
