"""The simulator's arbiter against the shared golden vectors (docs/arbiter-vectors.json) and the
exact analyzer: seed 002's two-node method, in both accounting modes.

Under saturation the arbiter is periodic, and at 100 Gb/s a byte takes exactly 80 ps, so the
measured window is a whole number of periods and the shares are exact to a packet."""

from __future__ import annotations

import json
import math

import pytest
from ibqos.arbiter import ArbTable
from ibqos.arbiter.exact import analyze_exact
from ibqos.paths import REPO_ROOT
from ibqos_sim.sim import SimParams, TrafficSpec, simulate
from simfabrics import star

VECTORS = json.loads((REPO_ROOT / "docs" / "arbiter-vectors.json").read_text())["vectors"]
# a 4 KB-MTU fabric: the packet sizes of the vectors that are whole MTU-ish packets
SIM_VECTORS = [v for v in VECTORS if v["packet_bytes"] >= 2048]
PS_PER_BYTE = 80  # at 100 Gb/s


def _vls(v) -> list[int]:
    return sorted({vl for vl, _ in v["high"] + v["low"]})


def run_vector(v, sources: int):
    vls = _vls(v)
    nvl = next(n for n in (1, 2, 4, 8, 15) if n > max(vls))
    arb = ArbTable([tuple(e) for e in v["high"]], [tuple(e) for e in v["low"]], v["limit"], 64, 64)
    identity = tuple(list(range(nvl)) + [0] * (16 - nvl))
    fabric = star(sources + 1, arb, vls=nvl, sl2vl=identity)
    period_us = v["period_bytes"] * PS_PER_BYTE / 1e6
    k = math.ceil(4e6 / v["period_bytes"])  # at least 4 MB measured
    params = SimParams(rate=100, mtu=4096, accounting=v["mode"], warmup_us=50 + 2 * period_us, time_us=k * period_us)
    traffic = TrafficSpec(
        pattern="twonode",
        sls=vls,
        msg_bytes=v["packet_bytes"],
        src=",".join(f"ca{i}" for i in range(sources)),
        dst=f"ca{sources}",
    )
    res = simulate(fabric, traffic, params)
    assert res.status == "done"
    return {s.sl: s.share_pct for s in res.per_sl}


@pytest.mark.parametrize("v", SIM_VECTORS, ids=[v["name"] for v in SIM_VECTORS])
def test_two_node_shares_match_vectors(v):
    """One CA sends one saturating flow per SL to another through one switch."""
    got = run_vector(v, sources=1)
    for vl, want in v["shares"].items():
        assert got.get(int(vl), 0.0) == pytest.approx(want, abs=0.1), (vl, got)


@pytest.mark.parametrize(
    "name",
    [
        "seed002-A/byte/4096",
        "seed002-B/packet/4096",
        "dla-pairs/byte/2048",
        "limit0-alternate/byte/4096",
        "vl-in-both/byte/4096",
    ],
)
def test_switch_output_arbiter_under_contention(name):
    """Three CAs saturate every VL towards a fourth: the switch's output port decides."""
    v = next(x for x in VECTORS if x["name"] == name)
    got = run_vector(v, sources=3)
    for vl, want in v["shares"].items():
        assert got.get(int(vl), 0.0) == pytest.approx(want, abs=0.1), (vl, got)


@pytest.mark.parametrize("config", ["seed002-A", "seed002-B"])
@pytest.mark.parametrize("mode", ["byte", "packet"])
def test_configs_a_b_against_exact_analyzer(config, mode):
    v = next(x for x in VECTORS if x["name"] == f"{config}/{mode}/4096")
    exact = analyze_exact(ArbTable(v["high"], v["low"], v["limit"]), packet_bytes=4096, mode=mode)
    got = run_vector(v, sources=1)
    for vl, st in exact.per_vl.items():
        assert got.get(vl, 0.0) == pytest.approx(st.share, abs=0.1), (vl, got)
