"""`ibqos monitor` on HDR and NDR links: the 32-bit per-SL counters wrap many times in any
interval, and the shares come from the sub-window the reader takes in each sample
(docs/monitor.md, "Fast links"). Every expected value below is worked out by hand in the
comments, from the link rates:

    HDR 4x: 4 x 50 Gb/s of data per lane = 200 Gb/s = 25e9 B/s = 6.25e9 words/s
    NDR 4x: 4 x 100 Gb/s of data per lane = 400 Gb/s = 50e9 B/s = 12.5e9 words/s
    (the lanes signal 53.125 and 106.25 Gbaud: 50 and 100 are the data rates, after coding)
    2^32 = 4,294,967,296 words
"""

from __future__ import annotations

import io

import pytest
from apply_helpers import make_plan_file
from ibqos.monitor.counters import Sample, traffic
from ibqos.monitor.export import MonitorCollector, registry_for
from ibqos.monitor.judge import judge
from ibqos.monitor.view import render
from monitor_helpers import CA, SW, link_fabric, per_sl, sample_doc
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console

HDR, NDR = ("4X", "50"), ("4X", "100")


@pytest.fixture
def plan(tmp_path):
    plan, _ = make_plan_file(tmp_path, "a", 40)
    return plan


def sls(plan):
    """(the qos class's first SL, best-effort's first SL)"""
    by = {c.name: c for c in plan.classes}
    return by["qos"].sls[0], by["best-effort"].sls[0]


def ports(t, sw, ca=None):
    """The sample's two ports: the switch port's counters as given, the CA's idle (and without
    PortRcvDataSL, which would measure the switch port's traffic from its end)."""
    idle = {"guid": f"0x{CA:x}", "port": 1, "lid": 2, "xmit_data_sl": per_sl({}), "xmit_data": 0, "rcv_data": 0,
            "errors": {}}  # fmt: skip
    return Sample.from_json(sample_doc(t, [{"guid": f"0x{SW:x}", "port": 1, "lid": 1, "errors": {}, **sw}, ca or idle]))


def hdr_interval(plan, window=None):
    """An HDR 4x port sending 5e9 words/s for 10 s, 3e9 on the qos SL and 2e9 on best-effort's:
    qos   1,000,000,000 + 30e9 = 31e9 = 7 x 2^32 + 935,228,928
    be    4,000,000,000 + 20e9 = 24e9 = 5 x 2^32 + 2,525,163,520
    total (64-bit) 10^13 + 5e10 = 10,050,000,000,000
    The interval's per-SL deltas (mod 2^32) are 4,230,196,224 and 2,820,130,816: 7,050,327,040,
    42,949,672,960 = 10 x 2^32 short of the 64-bit total, so ten wraps were lost."""
    q, be = sls(plan)
    old = ports(100.0, {"xmit_data_sl": per_sl({q: 1_000_000_000, be: 4_000_000_000}), "xmit_data": 10**13,
                        "rcv_data": 0})  # fmt: skip
    new_sw = {"xmit_data_sl": per_sl({q: 935_228_928, be: 2_525_163_520}), "xmit_data": 10_050_000_000_000,
              "rcv_data": 0}  # fmt: skip
    if window is not None:
        new_sw["xmit_data_sl_window"] = window
    return old, ports(110.0, new_sw)


def test_hdr_without_a_window_is_ambiguous_never_a_share(plan):
    old, new = hdr_interval(plan)
    j = judge(plan, link_fabric(*HDR), old, new)
    assert j.ambiguous == ["sw[1]"] and "sw" not in {ln.node for ln in j.links}
    assert [f.kind for f in j.findings] == ["counters-ambiguous"]


def sample(text: str, name: str, **labels: str) -> float | None:
    """The value of the exposition's sample `name` with exactly these labels."""
    found = [
        s.value for f in text_string_to_metric_families(text) for s in f.samples if (s.name, s.labels) == (name, labels)
    ]
    return found[0] if len(found) == 1 else None


def test_hdr_shares_come_from_the_window_and_the_volume_from_the_64_bit_counters(plan):
    """In 0.05 s at the same rates the qos SL counts 150,000,000 words and best-effort's
    100,000,000: shares 60 % / 40 %; 6e8 B and 4e8 B, 96 and 64 Gb/s; the link carried
    1e9 B in 0.05 s = 160 Gb/s = 0.8 of 200. The interval's volume is 5e10 words = 2e11 B."""
    q, be = sls(plan)
    window = {"s": 0.05, "s_min": 0.0498, "s_max": 0.0502,
              "values": per_sl({q: 935_228_928 + 150_000_000, be: 2_525_163_520 + 100_000_000})}  # fmt: skip
    old, new = hdr_interval(plan, window)
    j = judge(plan, link_fabric(*HDR), old, new)
    link = next(ln for ln in j.links if ln.node == "sw")
    assert (link.over, link.seconds, link.sent_bytes) == ("window", 0.05, 200_000_000_000)
    assert link.utilisation == pytest.approx(0.8)
    got = {c.name: (c.bytes, c.share, c.gbps) for c in link.classes}
    assert got["qos"] == (600_000_000, pytest.approx(0.6), pytest.approx(96.0))
    assert got["best-effort"] == (400_000_000, pytest.approx(0.4), pytest.approx(64.0))
    assert j.ambiguous == [] and not j.findings

    c = MonitorCollector()
    c.update(j)
    text = generate_latest(registry_for(c)).decode()
    # by value, not by text: prometheus_client 0.20 (the floor) writes 2e11 as 2e+011
    assert sample(text, "ibqos_class_share_seconds", node="sw", guid=f"0x{SW:016x}", over="window", port="1") == 0.05
    assert sample(text, "ibqos_port_bytes_total", node="sw", guid=f"0x{SW:016x}", port="1") == 2e11
    # the window's bytes are not the interval's: no class byte count is claimed for it
    assert f'ibqos_class_bytes_total{{class="qos",guid="0x{SW:016x}"' not in text
    # and the terminal view says the row is a window's
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(render(j, plan))
    row = next(line for line in console.export_text().splitlines() if "sw[1]" in line)
    assert "0.050 s window" in row and "60.0% 96.00G" in row


def _ndr(first, window, ext=(0, 0)):
    """One NDR port sample and its window (no interval: the port's per-SL counters only)."""
    pc = ports(1.0, {"xmit_data_sl": per_sl(first), "xmit_data_sl_window": window,
                     "xmit_data": ext[0], "rcv_data": ext[1]})  # fmt: skip
    return pc.ports[(SW, 1)]


def test_ndr_a_counter_that_wraps_inside_the_window_is_counted_once_round(plan):
    """qos: 4,294,867,296 (2^32 - 100,000) -> 199,900,000: 100,000 + 199,900,000 = 2e8 words;
    best-effort: 1,000 -> 300,001,000: 3e8 words. Shares 40 % / 60 %; 2e9 B in 0.05 s =
    320 Gb/s = 0.8 of 400."""
    q, be = sls(plan)
    window = {"s": 0.05, "s_min": 0.0499, "s_max": 0.0501, "values": per_sl({q: 199_900_000, be: 300_001_000})}
    new = _ndr({q: 4_294_867_296, be: 1_000}, window)
    ndr_words = 400e9 / 32
    t = traffic(new, new, 10.0, ndr_words)  # the same sample twice: the interval counted nothing
    assert t.xmit_sl is not None and not t.xmit_sl.window  # an empty interval measures (zero)
    old = _ndr({q: 0, be: 0}, window, ext=(0, 0))
    moved = _ndr({q: 4_294_867_296, be: 1_000}, window, ext=(5 * 2**32, 0))  # 5 wraps more than the deltas
    t = traffic(old, moved, 10.0, ndr_words)
    assert t.xmit_sl is not None and t.xmit_sl.window and t.xmit_sl.seconds == 0.05
    assert t.xmit_sl.bytes[q] == 800_000_000 and t.xmit_sl.bytes[be] == 1_200_000_000
    assert sum(t.xmit_sl.bytes) == 2_000_000_000


def test_ndr_a_window_too_long_for_the_rate_is_not_used(plan):
    """Half a wrap at NDR 4x: 2^31 / 12.5e9 = 0.1718 s. A window whose s_max is 0.2003 s
    could hide a wrap past half-way (2 x 0.2003 x 12.5e9 = 5.008e9 >= 2^32); one of
    0.1701 s (4.253e9) is used."""
    q, be = sls(plan)
    ndr_words = 400e9 / 32
    old = _ndr({q: 0, be: 0}, {"s": 0.2, "s_min": 0.1997, "s_max": 0.2003, "values": per_sl({})})
    long = {"s": 0.2, "s_min": 0.1997, "s_max": 0.2003, "values": per_sl({q: 1000, be: 3000})}
    t = traffic(old, _ndr({q: 10, be: 10}, long, ext=(3 * 2**32, 0)), 10.0, ndr_words)
    assert t.xmit_sl is None and t.ambiguous == ("xmit_data_sl",)
    short = {"s": 0.17, "s_min": 0.1699, "s_max": 0.1701, "values": per_sl({q: 1010, be: 3010})}
    t = traffic(old, _ndr({q: 10, be: 10}, short, ext=(3 * 2**32, 0)), 10.0, ndr_words)
    assert t.xmit_sl is not None and t.xmit_sl.bytes[q] == 4000 and t.xmit_sl.bytes[be] == 12000


def test_ndr_a_counter_cleared_inside_the_window_voids_it(plan):
    """`perfquery --xmtsl -r` between the two reads: 3,000,000,000 -> 5,000 reads as a wrap of
    2^32 - 3e9 + 5,000 = 1,294,972,296 words, more than the link carries in 2 x 0.0502 s
    (1.255e9): not traffic, the window measures nothing."""
    q, be = sls(plan)
    ndr_words = 400e9 / 32
    window = {"s": 0.05, "s_min": 0.0498, "s_max": 0.0502, "values": per_sl({q: 5_000, be: 1_000})}
    old = _ndr({q: 0, be: 0}, window)
    t = traffic(old, _ndr({q: 3_000_000_000, be: 1_000}, window, ext=(4 * 2**32, 0)), 10.0, ndr_words)
    assert t.xmit_sl is None and t.ambiguous == ("xmit_data_sl",)


def test_without_64_bit_counters_an_interval_is_measured_only_where_no_wrap_fits(plan):
    """No PortCountersExtended: over 10 s (+1 s of reading) HDR 4x carries 11 x 6.25e9 =
    6.875e10 words, more than 2^32: not measured. 1x SDR (2 Gb/s: 62.5e6 words/s) carries
    6.875e8: measured."""
    q, _ = sls(plan)
    a = ports(0.0, {"xmit_data_sl": per_sl({q: 10})}).ports[(SW, 1)]
    b = ports(10.0, {"xmit_data_sl": per_sl({q: 20})}).ports[(SW, 1)]
    assert traffic(a, b, 10.0, 200e9 / 32).xmit_sl is None
    t = traffic(a, b, 10.0, 2e9 / 32)
    assert t.xmit_sl is not None and t.xmit_sl.bytes[q] == 40


def test_after_a_reset_wraps_lost_since_it_are_ambiguous(plan):
    """The 64-bit counter went down (reset): since it, 3 x 2^32 + 500 words were sent, and the
    per-SL counters say 500: three wraps lost, not 500 words."""
    q, _ = sls(plan)
    a = ports(0.0, {"xmit_data_sl": per_sl({q: 9}), "xmit_data": 10**12, "rcv_data": 0}).ports[(SW, 1)]
    b = ports(10.0, {"xmit_data_sl": per_sl({q: 500}), "xmit_data": 3 * 2**32 + 500, "rcv_data": 0}).ports[(SW, 1)]
    t = traffic(a, b, 10.0)
    assert t.reset and t.xmit_sl is None and t.ambiguous == ("xmit_data_sl",)
