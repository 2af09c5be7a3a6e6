"""Arbiter analyzers against seed 002's configurations, hand formulas and each other."""

from __future__ import annotations

import json

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from ibqos.arbiter import ArbTable, accounting
from ibqos.arbiter.accounting import Accounting
from ibqos.arbiter.algorithm1 import analyze_algorithm1
from ibqos.arbiter.exact import NoPeriodError, analyze_exact
from ibqos.arbiter.rates import bytes_to_us, link_data_gbps, rate_gbps, us_to_bytes
from ibqos.arbiter.shares import long_run_shares
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from pydantic import TypeAdapter, ValidationError
from seed002_tables import CONFIG_A, CONFIG_B, byte_shares

A_TOTALS, B_TOTALS = [264, 158, 106], [704, 432, 288]


def shares(analysis) -> list[float]:
    return [analysis.per_vl[v].share for v in sorted(analysis.per_vl)]


def test_config_a_byte_mode_matches_the_paper():
    # The paper's tool reports SL3 = 8.57%: one low turn of 6*64 bytes per 4096 high bytes.
    got = shares(analyze_exact(CONFIG_A, 4096, "byte"))
    assert got[3] == pytest.approx(100 * 6 / 70, abs=1e-9)
    assert [round(x, 1) for x in got[:3]] == [45.7, 27.4, 18.4]
    assert got == pytest.approx(byte_shares(A_TOTALS, 6), abs=1e-9)


def test_config_b_byte_mode():
    got = shares(analyze_exact(CONFIG_B, 4096, "byte"))
    assert got == pytest.approx(byte_shares(B_TOTALS, 2), abs=1e-9)
    assert got[3] == pytest.approx(100 * 2 / 66, abs=1e-9)


@pytest.mark.parametrize("table", [CONFIG_A, CONFIG_B], ids=["A", "B"])
def test_packet_mode_whole_packet_per_entry(table):
    # 4 KB packets, all weights < 64: every turn is one packet; after each high packet
    # the counter (4096 >= 1*4096) gives the low table a turn: SL3 gets half the link and
    # the high SLs split the rest by entry count 32:16:16.
    assert shares(analyze_exact(table, 4096, "packet")) == pytest.approx([25, 12.5, 12.5, 50], abs=1e-9)


@pytest.mark.parametrize("table,totals,low", [(CONFIG_A, A_TOTALS, 6), (CONFIG_B, B_TOTALS, 2)], ids=["A", "B"])
def test_64_byte_packets_both_modes_coincide(table, totals, low):
    want = byte_shares(totals, low)
    for mode in ("byte", "packet"):
        assert shares(analyze_exact(table, 64, mode)) == pytest.approx(want, abs=1e-9)


@pytest.mark.parametrize("mode", ["byte", "packet"])
@pytest.mark.parametrize("table", [CONFIG_A, CONFIG_B], ids=["A", "B"])
def test_algorithm1_agrees_with_exact_at_300_runs(table, mode):
    exact = analyze_exact(table, 4096, mode)
    alg1 = analyze_algorithm1(table, 4096, mode, runs=300)
    for v in exact.per_vl:
        assert abs(exact.per_vl[v].share - alg1.per_vl[v].share) < 0.01


def test_exact_does_not_depend_on_runs_and_is_a_true_period():
    a = analyze_exact(CONFIG_A, 4096, "byte")
    # The period's bytes are a whole number of packets and reproduce the shares exactly.
    assert a.window_bytes % 4096 == 0
    assert sum(s.bytes for s in a.per_vl.values()) == a.window_bytes
    assert a.per_vl[3].bytes * 70 == a.window_bytes * 6


def test_limit_255_starves_low_and_limit_0_alternates():
    starve = analyze_exact(ArbTable([(0, 64)], [(1, 64)], 255), 4096, "byte")
    assert starve.per_vl[1].share == 0 and starve.per_vl[1].max_distance is None
    assert starve.per_vl[1].worst_wait_us is None
    alt = analyze_exact(ArbTable([(0, 64)], [(1, 64)], 0), 4096, "byte")
    assert alt.per_vl[0].share == pytest.approx(50)
    assert alt.per_vl[0].max_distance == 2 and alt.per_vl[0].worst_wait_bytes == 4096


def test_weight_zero_entries_are_skipped():
    a = analyze_exact(ArbTable([(0, 64), (1, 0), (2, 64)], [], 1), 4096, "byte")
    assert a.per_vl[0].share == pytest.approx(50) and a.per_vl[2].share == pytest.approx(50)
    assert 1 not in a.per_vl


def test_distance_and_wait_of_an_interleaved_table():
    # VL0 every 2nd entry, VL1/VL2 every 4th, one packet per entry, no low table.
    t = ArbTable([(0, 64), (1, 64), (0, 64), (2, 64)], [], 255)
    a = analyze_exact(t, 4096, "byte", rate_gbps=100.0)
    assert (a.per_vl[0].max_distance, a.per_vl[1].max_distance) == (2, 4)
    assert a.per_vl[0].mean_distance == 2 and a.per_vl[2].mean_distance == 4
    assert a.per_vl[1].worst_wait_bytes == 3 * 4096
    assert a.per_vl[1].worst_wait_us == pytest.approx(3 * 4096 * 8 / 100e3)


entries = st.lists(st.tuples(st.integers(0, 7), st.integers(0, 255)), max_size=8)


@settings(max_examples=80, deadline=None)
@given(
    high=entries,
    low=entries,
    limit=st.sampled_from([0, 1, 2, 3, 7, 254, 255]),
    size=st.sampled_from([64, 256, 1024, 2048, 4096]),
    mode=st.sampled_from(["byte", "packet"]),
)
def test_exact_equals_closed_form(high, low, limit, size, mode):
    t = ArbTable(high, low, limit)
    try:
        a = analyze_exact(t, size, mode, max_runs=100_000)
    except NoPeriodError:  # legal but too long a period for a unit test
        assume(False)
    closed = long_run_shares(t, size, mode)
    assert set(a.per_vl) == set(closed)
    for v, s in a.per_vl.items():
        assert s.share == pytest.approx(closed[v], abs=1e-9)
    if a.per_vl:
        assert sum(s.share for s in a.per_vl.values()) in (pytest.approx(100), 0)


def test_table_validation():
    with pytest.raises(ValueError, match="VL 15"):
        ArbTable([(15, 1)])
    with pytest.raises(ValueError, match="weight 256"):
        ArbTable([(0, 256)])
    with pytest.raises(ValueError, match="limit"):
        ArbTable([(0, 1)], [], 256)
    assert ArbTable.parse_entries("0:9, 1:10") == [(0, 9), (1, 10)]
    with pytest.raises(ValueError):
        ArbTable.parse_entries("0-9")


def test_a_turn_charged_as_docs_arbiter_md_says():
    """docs/arbiter.md, "Accounting modes", by hand. byte: a turn adds 64*weight to the
    deficit and sends while it is positive, carrying the overshoot; packet: max(1,
    ceil(64*weight/size)) packets, nothing carried. After a low turn the byte counter keeps the
    overshoot past the limit (4096*L, 1 byte for L = 0); the packet counter restarts."""
    byte = Accounting("byte", 4096, 2)
    assert byte.turn(64, 0) == (1, 0)  # 4096 bytes earned, one packet
    assert byte.turn(6, 0) == (1, 384 - 4096)  # seed 002's SL3: one packet on credit
    assert byte.turn(6, -3712) == (0, -3328)  # still in debt: nothing sent
    assert byte.turn(100, -10) == (2, 6390 - 8192)
    assert (byte.after_low_turn(9000), byte.after_low_turn(8000)) == (9000 - 8192, 0)
    assert Accounting("byte", 4096, 0).after_low_turn(5000) == 0
    packet = Accounting("packet", 2048, 2)
    assert [packet.turn(w, -999) for w in (1, 32, 33, 64)] == [(1, 0), (1, 0), (2, 0), (2, 0)]
    assert packet.after_low_turn(9000) == 0
    with pytest.raises(ValueError, match="mode"):
        Accounting("bytes", 4096, 0)
    with pytest.raises(ValueError, match="packet size"):
        Accounting("byte", 0, 0)


def test_a_table_document_is_validated_and_written_back():
    """The JSON form of a table (plan.json, fabric.json): read through pydantic into an ArbTable,
    written back the same; every bound the IBA puts on it is refused by name."""
    ta = TypeAdapter(ArbTable)
    doc = {"high": [[0, 9], [1, 10]], "low": [[3, 6]], "high_limit": 1}
    t = ta.validate_python(doc)
    assert t == ArbTable([(0, 9), (1, 10)], [(3, 6)], 1)
    assert ta.validate_json(json.dumps(doc)) == t and ta.validate_python(t) is t
    assert ta.dump_python(t) == doc and json.loads(ta.dump_json(t)) == doc
    capped = ta.validate_python({"high": [], "low": [], "high_limit": 255, "high_cap": 64, "low_cap": 8})
    assert (capped.limit, capped.high_cap, capped.low_cap) == (255, 64, 8)
    for bad in (
        {"high": [[15, 1]], "low": [], "high_limit": 0},  # VL 15 is never arbitrated
        {"high": [[0, 256]], "low": [], "high_limit": 0},
        {"high": [[-1, 1]], "low": [], "high_limit": 0},
        {"high": [[0, -1]], "low": [], "high_limit": 0},
        {"high": [[0, 1, 2]], "low": [], "high_limit": 0},
        {"high": [[0]], "low": [], "high_limit": 0},
        {"high": [[0, 1]] * 65, "low": [], "high_limit": 0},
        {"high": [], "low": [[0, 1]] * 65, "high_limit": 0},
        {"high": [], "low": [], "high_limit": 256},
        {"high": [], "low": [], "high_limit": -1},
        {"high": [], "low": [], "high_limit": 0, "high_cap": 65},
        {"high": [], "low": [], "high_limit": 0, "low_cap": -1},
        {"high": [], "low": [], "high_limit": 0, "extra": 1},
        {"high": [], "high_limit": 0},
        {"low": [], "high_limit": 0},
        {"high": [], "low": []},
    ):
        with pytest.raises(ValidationError):
            ta.validate_python(bad)
        with pytest.raises(ValidationError):
            ta.validate_json(json.dumps(bad))


BAD_BOUNDS = [
    ([(15, 1)], [], 0, 0, 0),  # VL 15 is never arbitrated
    ([(0, 256)], [], 0, 0, 0),
    ([(-1, 1)], [], 0, 0, 0),
    ([(0, -1)], [], 0, 0, 0),
    ([(0, 1)] * 65, [], 0, 0, 0),  # a port holds at most 64 entries
    ([], [(0, 1)] * 65, 0, 0, 0),
    ([], [], 256, 0, 0),
    ([], [], -1, 0, 0),
    ([], [], 0, 65, 0),
    ([], [], 0, 0, -1),
]


@pytest.mark.parametrize("high, low, limit, high_cap, low_cap", BAD_BOUNDS)
def test_a_table_built_in_python_has_the_documents_bounds(high, low, limit, high_cap, low_cap):
    """One check of a table's bounds: what a plan or fabric document may not hold, the
    constructor (the planner, `analyze --high`, the read-back) refuses too, naming the part.
    Before, the two were separate checks and a 65-entry table passed the constructor."""
    doc = {"high": high, "low": low, "high_limit": limit, "high_cap": high_cap, "low_cap": low_cap}
    with pytest.raises(ValidationError):
        TypeAdapter(ArbTable).validate_python(doc)
    with pytest.raises(ValueError, match=r"^(high|low|limit|high_cap|low_cap)\b"):
        ArbTable(high, low, limit, high_cap, low_cap)


def test_the_exact_analyzer_charges_turns_as_accounting_does(monkeypatch):
    """exact.py's hot loop takes a turn's charge and the counter's reset from Accounting (the
    owner of docs/arbiter.md's accounting modes), not from a copy: a different weight unit
    or reset there changes its result. Before, exact.py kept its own turn and the literal 64,
    and its shares stayed the same under both changes below."""
    table = ArbTable([(0, 40), (1, 24)], [(2, 30)], 2)
    base = shares(analyze_exact(table, 4096, "byte"))
    assert base == pytest.approx(byte_shares([40, 24], 30, limit=2))
    monkeypatch.setattr(accounting, "UNIT", 32)  # a weight unit of 32 bytes: the low turn halves
    assert shares(analyze_exact(table, 4096, "byte")) == pytest.approx(
        [100 * 8192 / (8192 + 960) * w / 64 for w in (40, 24)] + [100 * 960 / (8192 + 960)], abs=0.05
    )
    monkeypatch.setattr(accounting, "UNIT", 64)
    # 3000-byte packets overshoot the limit (3 packets, 9000 bytes, per 8192): byte accounting
    # carries the overshoot; a counter that restarts at 0 instead gives the low table less
    assert shares(analyze_exact(table, 3000, "byte")) == pytest.approx(list(long_run_shares(table, 3000).values()))
    monkeypatch.setattr(accounting.Accounting, "after_low_turn", lambda self, hi_count: 0)
    assert shares(analyze_exact(table, 3000, "byte"))[2] == pytest.approx(100 * 1920 / (9000 + 1920), abs=0.05)


# ---- VLHighLimit above one packet (docs/mutation.md's gap: every example plans limit 0 or 1) --

LIMIT_POLICY = """\
fabric: {rate: EDR, mtu: 4096, data_vls: 4, vlarb_cap: {high: 64, low: 64}, routing: minhop, accounting: byte}
classes:
  - {name: bulk, priority: high, bandwidth: 60, sls: [0]}
  - {name: mpi, priority: high, bandwidth: 39, sls: [1]}
  - {name: scavenger, priority: low, bandwidth: rest, sls: [2], default: true}
"""


def paper_algorithm1(table: ArbTable, unit: int, per_entry, limit_bytes: int, runs: int) -> dict[int, int]:
    """Seed 002's Algorithm 1 as printed (its line numbers), bytes per VL, written for these
    tests from the paper, not from ibqos.arbiter: `unit` bytes per delivery (line 14),
    `per_entry(weight)` deliveries per entry (lines 6-7, 10), the counter compared with
    `limit_bytes` (line 8) and reset to 0 after a low turn (line 12); weight-0 entries are
    never selected."""
    hp = [(vl, w) for vl, w in table.high if w]
    lp = [(vl, w) for vl, w in table.low if w]
    sent = dict.fromkeys(table.vls, 0)
    counter, lp_next = 0, 0  # line 3
    for i in range(len(hp) * runs):  # line 4
        vl, w = hp[i % len(hp)]  # lines 5-6
        for _ in range(per_entry(w)):  # line 7
            if table.limit != 255 and counter >= limit_bytes:  # line 8
                lvl, lw = lp[lp_next]  # line 9
                sent[lvl] += per_entry(lw) * unit  # line 10: all the entry's packets at once
                lp_next = (lp_next + 1) % len(lp)
                counter = 0  # line 12
            sent[vl] += unit  # line 14
            counter += unit  # line 15
    return sent


@pytest.fixture(scope="module")
def limit_table(tmp_path_factory) -> ArbTable:
    """The terminal table the planner makes for a 1% low class: too little for one low turn per
    4096 bytes (weight < 1), so it plans VLHighLimit 2."""
    f = tmp_path_factory.mktemp("limit") / "policy.yaml"
    f.write_text(LIMIT_POLICY)
    table = make_plan(load_policy(f)).vlarb.role("terminal")
    assert table.limit == 2 and table.low, table  # the premise: a limit above one packet
    return table


@pytest.mark.parametrize(
    "mode, size, runs", [("byte", 4096, 3), ("byte", 2048, 2), ("packet", 2048, 2), ("packet", 3000, 2)]
)
def test_algorithm1_with_a_planned_vlhighlimit_of_2_delivers_what_the_paper_does(limit_table, mode, size, runs):
    """Byte accounting runs the paper's loop on 64-byte units (a turn is its weight in units,
    the counter reaches 4096*2 bytes exactly); packet accounting on whole packets, the counter
    restarting at 0 (3000-byte packets overshoot 8192 at 9000: nothing is carried)."""
    if mode == "byte":
        want = paper_algorithm1(limit_table, 64, lambda w: w, 2 * 4096, runs)
    else:
        want = paper_algorithm1(limit_table, size, lambda w: max(1, -(-64 * w // size)), 2 * 4096, runs)
    got = analyze_algorithm1(limit_table, size, mode, runs=runs)
    assert {vl: s.bytes for vl, s in got.per_vl.items()} == want
    assert got.window_bytes == sum(want.values())


def test_algorithm1_and_exact_shares_at_vlhighlimit_2_by_hand(limit_table):
    """Long-run shares by hand (seed002_tables.byte_shares: per 4096*2 bytes of high traffic,
    one low entry's 64*weight bytes, the low entries taken in turn): Algorithm 1 over whole
    low-table cycles and the exact analyzer agree with it."""
    high_totals = [sum(w for vl, w in limit_table.high if vl == v) for v in (0, 1)]
    low_mean = sum(w for _, w in limit_table.low) / len(limit_table.low)
    want = byte_shares(high_totals, low_mean, limit=2)
    assert want[2] == pytest.approx(100 * 64 * low_mean / (8192 + 64 * low_mean))
    assert shares(analyze_exact(limit_table, 4096, "byte")) == pytest.approx(want, abs=1e-9)
    # 32 runs of the high table send 32 x 32 x 64 x ~64.4 bytes: ~8 low cycles, not whole; 0.01 pp
    assert shares(analyze_algorithm1(limit_table, 4096, "byte", runs=32)) == pytest.approx(want, abs=0.01)


@pytest.mark.parametrize("mode", ["byte", "packet"])
def test_algorithm1_vlhighlimit_0_is_one_packet_per_low_turn(mode):
    """Limit 0: one high packet (4096 bytes), then a low turn; the packet counter compares
    with 1 byte, which one packet passes as well."""
    table = ArbTable([(0, 64), (1, 128)], [(2, 32)], 0)
    per = (lambda w: w) if mode == "byte" else (lambda w: max(1, -(-64 * w // 4096)))
    unit = 64 if mode == "byte" else 4096
    want = paper_algorithm1(table, unit, per, 4096 if mode == "byte" else 1, 5)
    got = analyze_algorithm1(table, 4096, mode, runs=5)
    assert {vl: s.bytes for vl, s in got.per_vl.items()} == want
    # 5 runs of 3 high packets (weights 64 + 128 units): a low turn between each two, 14,
    # of 2048 bytes (32 units) or one whole packet
    low = 14 * (2048 if mode == "byte" else 4096)
    assert shares(got)[2] == pytest.approx(100 * low / (15 * 4096 + low))


def test_exact_analysis_of_tables_that_send_nothing():
    """Empty tables, or only weight-0 entries (which the arbiter skips): nothing is sent, no VL
    has a share, and the analysis says why instead of searching for a period."""
    for table in (ArbTable([], [], 1), ArbTable([(0, 0), (1, 0)], [(2, 0)], 0)):
        for mode in ("byte", "packet"):
            a = analyze_exact(table, 2048, mode, rate_gbps=54.54)
            assert (a.engine, a.mode, a.packet_bytes, a.rate_gbps) == ("exact", mode, 2048, 54.54)
            assert (a.per_vl, a.window_bytes, a.window_packets) == ({}, 0, 0)
            assert a.notes == ["both tables are empty: nothing is sent"]


def test_rates_by_name_number_and_suffix():
    """IBA 4x data rates after encoding, and Gb/s given as a number with or without a unit."""
    assert [rate_gbps(r) for r in ("SDR", "ddr", " QDR ", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR")] == [
        8.0, 16.0, 32.0, 40.0, 54.54, 100.0, 200.0, 400.0, 800.0
    ]  # fmt: skip
    assert [rate_gbps(r) for r in (56, 56.5, "56", "56G", "56g", "56 Gb/s", "56gbps", "12.5 GB/S")] == [
        56.0, 56.5, 56.0, 56.0, 56.0, 56.0, 56.0, 12.5
    ]  # fmt: skip
    for bad, says in (("EDRx", "unknown link rate 'EDRx'"), (True, "unknown link rate"), ("fast", "one of SDR")):
        with pytest.raises(ValueError, match=says):
            rate_gbps(bad)
    for bad in (0, -1, "0", "-5G", 0.0):
        with pytest.raises(ValueError, match="must be positive"):
            rate_gbps(bad)
    assert rate_gbps(2400) == 2400.0  # XDR 12x
    for bad in (2400.5, 100000, "1e300"):
        with pytest.raises(ValueError, match=r"above the fastest InfiniBand port \(XDR 12x, 2400 Gb/s\)"):
            rate_gbps(bad)
    # redfiles: below one SDR lane (2 Gb/s) no port runs; `rate: "4.9e-324"` made a packet's
    # time infinite (plan: internal error, OverflowError) and 1e-10 printed waits of 10^14 µs
    assert rate_gbps(2) == 2.0
    for bad in ("4.9e-324", 1e-10, "1.9 Gb/s", 0.5):
        with pytest.raises(ValueError, match=r"below the slowest InfiniBand port \(SDR 1x, 2 Gb/s\)"):
            rate_gbps(bad)
    # 4096 bytes at 100 Gb/s: 32768 bits / 100 bits per ns = 327.68 ns; 1 µs at 54.54 Gb/s
    assert bytes_to_us(4096, 100.0) == pytest.approx(0.32768)
    assert us_to_bytes(1.0, 54.54) == pytest.approx(6817.5)
    assert us_to_bytes(bytes_to_us(12345, 200.0), 200.0) == pytest.approx(12345)


@pytest.mark.parametrize(
    "width, speed, gbps",
    [
        ("1X", "2.5", 2.0),  # SDR: 2.5 Gbaud x 8/10
        ("4X", "5", 16.0),  # DDR: 4 x 5 x 8/10
        ("4X", "10", 32.0),  # QDR: 4 x 10 x 8/10
        ("4X", "10.0", 32.0),
        ("12X", "10", 96.0),
        ("4X", "FDR10", 40.0),  # 4 x 10.3125 x 64/66 = 4 x 10
        ("4X", "14", 54.545),  # FDR: 4 x 14.0625 x 64/66 = 4 x 13.636
        ("4X", "25", 100.0),  # EDR: 4 x 25.78125 x 64/66 = 4 x 25 (not 4 x 25 x 64/66 = 96.97)
        ("8X", "25", 200.0),
        ("4X", "50", 200.0),  # HDR: 50 Gb/s of data per lane (not 4 x 50 x 64/66 = 193.94)
        ("2X", "50", 100.0),
        ("4X", "100", 400.0),  # NDR: 100 Gb/s of data per lane (not 387.88)
        ("12X", "100", 1200.0),
        ("4X", "??", None),
        ("??", "25", None),
        ("4X", "53.125", None),  # a signalling rate is no lane speed PortInfo names
    ],
)
def test_link_data_rate_from_portinfo_width_and_lane_speed(width, speed, gbps):
    """The IBTA data rates behind PortInfo's nominal lane speeds, worked by hand."""
    got = link_data_gbps(width, speed)
    assert got == (None if gbps is None else pytest.approx(gbps, rel=2e-4))


@pytest.mark.parametrize("limit", [0, 1, 2])
def test_algorithm1_without_a_low_table_ignores_the_limit(limit):
    """A port may hold a high table alone with any VLHighLimit: there is no low turn to give,
    so the high table keeps the link (seed 002's line 8 applies only beside a low table)."""
    got = analyze_algorithm1(ArbTable([(0, 96), (1, 32)], [], limit), 4096, "byte", runs=4)
    assert {vl: s.bytes for vl, s in got.per_vl.items()} == {0: 4 * 96 * 64, 1: 4 * 32 * 64}
