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
from ibqos.arbiter.shares import long_run_shares
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
