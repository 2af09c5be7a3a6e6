"""docs/arbiter-vectors.json (shared with the C simulator) against the analyzer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ibqos.arbiter import ArbTable
from ibqos.arbiter.exact import analyze_exact
from ibqos.arbiter.shares import long_run_shares
from seed002_tables import CONFIG_A, byte_shares

VECTORS = json.loads((Path(__file__).resolve().parents[2] / "docs" / "arbiter-vectors.json").read_text())


@pytest.mark.parametrize("vec", VECTORS["vectors"], ids=lambda v: v["name"])
def test_vector(vec):
    t = ArbTable(vec["high"], vec["low"], vec["limit"])
    a = analyze_exact(t, vec["packet_bytes"], vec["mode"])
    closed = long_run_shares(t, vec["packet_bytes"], vec["mode"])
    assert {str(v) for v in a.per_vl} == set(vec["shares"])
    for v, s in a.per_vl.items():
        assert s.share == pytest.approx(vec["shares"][str(v)], abs=1e-6)
        assert closed[v] == pytest.approx(vec["shares"][str(v)], abs=1e-6)


def test_seed002_vector_is_the_paper():
    vec = next(v for v in VECTORS["vectors"] if v["name"] == "seed002-A/byte/4096")
    assert [tuple(e) for e in vec["high"]] == list(CONFIG_A.high)
    want = byte_shares([264, 158, 106], 6)
    assert [vec["shares"][k] for k in "0123"] == pytest.approx(want, abs=1e-6)
