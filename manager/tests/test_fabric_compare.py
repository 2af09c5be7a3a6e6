"""compare.diff on models built from the generator's wiring (no fabric needed)."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ibqos.arbiter import ArbTable
from ibqos.errors import InputError
from ibqos.fabric import NO_ROUTE, Fabric
from ibqos.fabric.compare import diff
from ibqos_sim.harness.topology import dragonfly


def _routed() -> Fabric:
    """The 42-CA dragonfly's wiring with LIDs, a made-up LFT and SL2VL on every switch."""
    f = dragonfly(3, 2, 3, 7).to_fabric()
    lid = 1
    for n in sorted(f.nodes.values(), key=lambda n: n.guid):
        for p in n.ports.values():
            p.width, p.speed, p.op_vls = "4X", "2.5", 8
            if n.kind == "ca":
                p.lid, p.guid = lid, n.guid << 8 | p.num
                lid += 1
    for n in f.switches():
        n.lft = [NO_ROUTE] + [1 + (n.guid + d) % n.nports for d in range(1, lid)]
        for i in range(n.nports + 1):
            for o in n.ports:
                n.sl2vl[(i, o)] = tuple((sl + i + o) % 8 for sl in range(16))
    return f


def test_equal_models_have_no_difference():
    f = _routed()
    assert diff(f, copy.deepcopy(f)) == []


def test_json_round_trip_keeps_the_model(tmp_path):
    f = _routed()
    f.save(tmp_path / "m.json")
    assert diff(f, Fabric.load(tmp_path / "m.json")) == []


def test_json_keeps_the_per_pair_sls_and_refuses_bad_ones(tmp_path):
    f = _routed()
    assert "path_sls" not in f.to_json()  # not read: absent, not empty
    lids = sorted(p.lid for n in f.cas() for p in n.ports.values())
    f.path_sls = {(s, d): (s * 7 + d) % 16 for s in lids for d in lids if s != d}
    f.save(tmp_path / "m.json")
    assert Fabric.load(tmp_path / "m.json").path_sls == f.path_sls
    # the file is one line of JSON: a field that is there is on line 1, a missing one has no line
    for bad, message in (
        (None, ":1: path_sls: Input should be a valid array (got 5)"),
        ([1, 2], ": path_sls.0.2: Field required"),
        ([1, 2, 16], ":1: path_sls.0.2: Input should be less than or equal to 15"),
        ([0, 2, 1], ":1: path_sls.0.0: Input should be greater than or equal to 1"),
        ([1, "2", 1], ':1: path_sls.0.1: Input should be a valid integer (got "2")'),
    ):
        doc = f.to_json() | {"path_sls": 5 if bad is None else [bad]}
        (tmp_path / "bad.json").write_text(json.dumps(doc))
        with pytest.raises(InputError) as e:
            Fabric.load(tmp_path / "bad.json")
        assert str(e.value) == f"{tmp_path / 'bad.json'}{message}"


def test_each_kind_of_difference_is_named():
    a = _routed()
    b = copy.deepcopy(a)
    sw = next(n for n in b.switches() if n.desc == "sw-g2-s1")
    ca = next(n for n in b.cas() if n.desc == "ca-g0-s0-h1")
    sw.lft[5] = NO_ROUTE if sw.lft[5] != NO_ROUTE else 1
    sw.sl2vl[(0, 3)] = (7,) * 16
    ca.ports[1].lid += 100
    sw.ports[4].remote = None
    out = diff(a, b)
    assert len(out) == 4, out
    assert any("'sw-g2-s1'" in d and "lft lid 5" in d for d in out)
    assert any("'sw-g2-s1'" in d and "sl2vl in 0 out 3" in d and "7777777777777777" in d for d in out)
    assert any("'ca-g0-s0-h1'" in d and "port 1: lid" in d for d in out)
    assert any("'sw-g2-s1' " in d and "port 4: remote" in d and "!= none" in d for d in out)


def test_missing_node_and_port_are_reported():
    a = _routed()
    b = copy.deepcopy(a)
    gone = next(n for n in b.cas() if n.desc == "ca-g6-s2-h0")
    del b.nodes[gone.guid]
    del next(n for n in b.switches() if n.desc == "sw-g1-s0").ports[1]
    out = diff(a, b)
    assert any("'ca-g6-s2-h0'" in d and "only in" in d for d in out)
    assert any("'sw-g1-s0'" in d and "port 1: only in the first model" in d for d in out)


def test_attributes_a_source_does_not_record_are_not_compared():
    a = _routed()
    b = copy.deepcopy(a)
    for n in b.nodes.values():
        for p in n.ports.values():
            p.op_vls, p.vl_cap, p.mtu = 0, 0, 0  # as loaded from OpenSM's dumps
    assert diff(a, b) == []
    next(iter(next(b.switches()).ports.values())).op_vls = 4
    assert len(diff(a, b)) == 1


def test_vlarb_is_compared_only_when_asked():
    a = _routed()
    b = copy.deepcopy(a)
    port = next(b.switches()).ports[1]
    port.vlarb = ArbTable(high=[(0, 4)] * 8, low=[(1, 1)] * 8, limit=3, high_cap=8, low_cap=8)
    assert diff(a, b, vlarb=False) == []
    assert len(diff(a, b, vlarb=True)) == 1
    c = copy.deepcopy(b)
    cport = c.nodes[next(c.switches()).guid].ports[1]
    cport.vlarb = dataclasses.replace(cport.vlarb, limit=4)
    assert len(diff(b, c)) == 1 and "limit=3" in diff(b, c)[0]


def test_many_lft_differences_are_summarised():
    a = _routed()
    b = copy.deepcopy(a)
    sw = next(b.switches())
    sw.lft = [NO_ROUTE] * len(sw.lft)
    out = diff(a, b)
    assert len(out) == 4 and out[-1].endswith(f"{len(sw.lft) - 1 - 3} more LIDs differ")


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_any_single_table_entry_change_is_found(data):
    a = _routed()
    b = copy.deepcopy(a)
    sw = data.draw(st.sampled_from(sorted(b.switches(), key=lambda n: n.guid)))
    if data.draw(st.booleans()):
        lid = data.draw(st.integers(1, len(sw.lft) - 1))
        sw.lft[lid] = data.draw(st.sampled_from([p for p in range(sw.nports + 1) if p != sw.lft[lid]]))
        want = f"lft lid {lid}:"
    else:
        key = data.draw(st.sampled_from(sorted(sw.sl2vl)))
        sl = data.draw(st.integers(0, 15))
        vls = list(sw.sl2vl[key])
        vls[sl] = (vls[sl] + data.draw(st.integers(1, 14))) % 15
        sw.sl2vl[key] = tuple(vls)
        want = f"sl2vl in {key[0]} out {key[1]}:"
    out = diff(a, b)
    assert len(out) == 1 and want in out[0] and repr(sw.desc) in out[0]
