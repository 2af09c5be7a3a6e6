"""Issue 23: the counter arithmetic between two samples: 32-bit per-SL and 16-bit per-VL
wrap, a reset (a 64-bit counter going down), and ports that did not answer an attribute."""

from __future__ import annotations

import json

import pytest
from ibqos.errors import InputError
from ibqos.monitor.counters import Sample, traffic
from monitor_helpers import SW, link_fabric, sample_doc


def _doc(ports, t=100.0):
    return sample_doc(t, ports)


def _port(xmit, wait=None, ext=None, **extra):
    p = {"guid": "0x0000000000200000", "port": 3, "lid": 2, "xmit_data_sl": xmit, "errors": {}}
    if wait is not None:
        p["vl_xmit_wait"] = wait
    if ext is not None:
        p["xmit_data"], p["rcv_data"] = ext
    p.update(extra)
    return p


def _sl(**v):
    return [v.get(f"s{i}", 0) for i in range(16)]


def _one(doc):
    return next(iter(Sample.from_json(doc).ports.values()))


def test_32_bit_per_sl_and_16_bit_per_vl_counters_wrap():
    old = _one(_doc([_port(_sl(s1=2**32 - 10, s2=5), wait=_sl(s4=65530), ext=(10, 10))]))
    new = _one(_doc([_port(_sl(s1=20, s2=7), wait=_sl(s4=4), ext=(50, 10))]))
    t = traffic(old, new, 10.0)
    assert not t.reset
    assert t.xmit_sl.bytes[1] == 30 * 4 and t.xmit_sl.bytes[2] == 2 * 4  # octets / 4 on the wire
    assert t.vl_wait[4] == 10


def test_a_64_bit_counter_going_down_is_a_reset_and_new_values_count_from_zero():
    old = _one(_doc([_port(_sl(s1=1000), ext=(5000, 900))]))
    new = _one(_doc([_port(_sl(s1=300), ext=(400, 900))]))
    t = traffic(old, new, 10.0)
    assert t.reset and t.xmit_sl.bytes[1] == 300 * 4


def test_a_port_without_per_sl_counters_has_none_and_says_why():
    p = _port(None, errors={"xmit_data_sl": "MAD status 0x000c"})
    del p["xmit_data_sl"]
    pc = _one(_doc([p]))
    assert pc.per_sl_xmit is None and pc.errors == {"xmit_data_sl": "MAD status 0x000c"}
    assert traffic(pc, pc, 10.0).xmit_sl is None


@pytest.mark.parametrize(
    "bad",
    [
        _doc([_port(_sl(s1=2**32))]),  # wider than the attribute's 32 bits
        _doc([_port([1, 2, 3])]),  # not 16 SLs
        json.dumps({"schema": "ibqos.fabric/1", "time": 0, "ports": []}),
        "{",
    ],
)
def test_a_malformed_sample_is_one_input_error(bad):
    # text that is no JSON is said as every JSON document's is (docfile.parse_json), with its line
    with pytest.raises(InputError, match=r"ibqos\.counters/1" if bad != "{" else r"^state\.json:1: not JSON: "):
        Sample.from_json(bad, "state.json")


def test_a_sample_round_trips_through_the_state_file():
    window = {"s": 0.05, "s_min": 0.0499, "s_max": 0.0502, "values": _sl(s3=9)}
    s = Sample.from_json(
        _doc(
            [
                _port(_sl(s3=7), wait=_sl(s1=1), ext=(9, 8), xmit_data_sl_window=window),
                {"guid": "0x1", "port": 1, "lid": 1, "skipped": "sm-port"},
            ]
        )
    )
    assert s.ports[(0x200000, 3)].xmit_window is not None
    assert Sample.from_json(s.to_json()) == s


@pytest.mark.parametrize(
    "window",
    [
        {"s": 0.05, "s_min": 0.06, "s_max": 0.07, "values": _sl()},  # s_min after s
        {"s": 0.05, "s_min": 0.04, "s_max": 0.06, "values": [1, 2]},  # not 16 SLs
        {"s": 0.05, "s_min": 0.04, "s_max": 0.06, "values": _sl(s1=2**32)},  # wider than 32 bits
        {"s": 0.05, "values": _sl()},  # no bounds
    ],
)
def test_a_malformed_sub_window_is_one_input_error(window):
    # a missing bound is the document's schema (docfile.DOCUMENT), named by its field
    with pytest.raises(
        InputError, match=r"ibqos\.counters/1 document: .*(xmit_data_sl|s_min)|_window\.s_min: Field req"
    ):
        Sample.from_json(_doc([_port(_sl(), xmit_data_sl_window=window)]), "state.json")


def test_a_per_sl_counter_cleared_alone_counts_from_zero_not_as_a_wrap():
    """`perfquery --xmtsl -r` clears PortXmitDataSL, not the 64-bit counters: the counter going
    down from 3e9 to 250 is no wrap (that would be 1.3e9 words, 5 GB, in one second of a link
    that carries 1 GB), so the traffic is the 250 words since the clear."""
    old = _one(_doc([_port(_sl(s1=3_000_000_000, s2=400), ext=(10**12, 10**12))]))
    new = _one(_doc([_port(_sl(s1=250, s2=500), ext=(10**12 + 350, 10**12))]))
    sdr_4x = 8 * 10**9 // 8 // 4  # words per second
    # 1 s apart, read over up to a second more: at most 2 * 2 * sdr_4x = 1e9 words, < 1.3e9
    t = traffic(old, new, 1.0, sdr_4x)
    assert t.xmit_sl is not None
    assert t.xmit_sl.bytes[1] == 250 * 4 and t.xmit_sl.bytes[2] == 100 * 4
    # a counter that went down by less than the link carries is a wrap, as before
    near = _one(_doc([_port(_sl(s1=2**32 - 10), ext=(10**12, 10**12))]))
    assert traffic(near, new, 1.0, sdr_4x).xmit_sl.bytes[1] == 260 * 4


def test_per_sl_counters_that_wrapped_twice_are_ambiguous_not_a_share():
    """One SL alone at EDR wraps its 32-bit counter every 1.4 s: in 10 s the 64-bit total moves
    2^32 words more than the per-SL deltas say, and the direction is not measured."""
    old = _one(_doc([_port(_sl(s1=100, s2=100), ext=(0, 0))]))
    new = _one(_doc([_port(_sl(s1=200, s2=300), ext=(3 * 2**32 + 300, 0))]))
    t = traffic(old, new, 10.0)
    assert t.xmit_sl is None and t.ambiguous == ("xmit_data_sl",)
    # the same per-SL deltas with a 64-bit total that agrees are measured
    agree = _one(_doc([_port(_sl(s1=200, s2=300), ext=(300, 0))]))
    assert traffic(old, agree, 10.0).xmit_sl.bytes[1:3] == (400, 800) and not traffic(old, agree, 10.0).ambiguous


def test_a_truncated_state_file_names_its_line():
    text = _doc([_port(_sl(s1=1))]).replace(", ", ",\n")
    with pytest.raises(InputError) as e:
        Sample.from_json(text[: len(text) // 2], "state.json")
    assert str(e.value).startswith("state.json:") and e.value.line is not None


def _both(t, sw_xmit, ca_xmit):
    return _doc(
        [
            {"guid": "0x20", "port": 1, "lid": 1, "xmit_data_sl": sw_xmit, "rcv_data_sl": ca_xmit, "errors": {}},
            {"guid": "0x30", "port": 1, "lid": 2, "xmit_data_sl": ca_xmit, "rcv_data_sl": sw_xmit, "errors": {}},
        ],
        t,
    )


def test_an_idle_link_gives_no_class_a_share_and_exports_none(tmp_path):
    """A 0 % share means a class got nothing of a link that carried traffic; a link that
    carried none gives no share (JSON null, no gauge sample), not 0 % for every class."""
    from apply_helpers import make_plan_file
    from ibqos.monitor.export import MonitorCollector, registry_for
    from ibqos.monitor.judge import judge
    from prometheus_client import generate_latest

    plan, _ = make_plan_file(tmp_path, "a", 40)
    be = next(c for c in plan.classes if c.name == "best-effort")
    busy = _sl(**{f"s{be.sls[0]}": 1000})
    j = judge(
        plan, link_fabric(), Sample.from_json(_both(0.0, _sl(), _sl())), Sample.from_json(_both(1.0, busy, _sl()))
    )
    by_node = {ln.node: {c.name: c.to_json()["share_pct"] for c in ln.classes} for ln in j.links}
    assert by_node["sw"] == {"qos": 0.0, "best-effort": 100.0}  # sent: its classes' shares
    assert by_node["ca"] == {"qos": None, "best-effort": None}  # idle: none
    c = MonitorCollector()
    c.update(j)
    text = generate_latest(registry_for(c)).decode()
    assert f'ibqos_class_share_ratio{{class="qos",guid="0x{SW:016x}",node="sw",port="1"}} 0.0' in text
    assert 'node="ca"' not in text.split("# HELP ibqos_class_bytes_total")[0]
