"""Seed 002's Algorithm 1: run the high table `runs` times and count what is delivered.

The loop structure is the paper's (line numbers in comments). What the paper leaves to the
packet size is made explicit by the accounting mode (docs/arbiter.md):
- `byte`: the paper's loop as written. Line 7 (`for j <- entry_weight`) delivers one 64-byte
  unit per iteration and line 15 adds 64 bytes, so a turn is charged exactly its weight and
  the counter reaches the limit exactly. This is the fluid limit of the byte-accurate
  arbiter: its long-run shares equal the exact analyzer's for any packet size, and it
  converges within a few runs. VLHighLimit 0 means one packet (`packet_bytes`) of high
  traffic per low turn.
- `packet`: every delivery is a whole packet; a turn sends max(1, ceil(64*weight/size))
  packets and the counter restarts at 0 after a low turn.
Distances and waits in `byte` mode are therefore those of 64-byte units; the exact
analyzer (arbiter/exact.py) gives them at packet granularity.
"""

from __future__ import annotations

from collections.abc import Callable

from .accounting import UNIT, Accounting
from .result import ArbAnalysis
from .table import NO_LIMIT, ArbTable
from .trace import Trace


def analyze_algorithm1(
    table: ArbTable,
    packet_bytes: int = 4096,
    mode: str = "byte",
    rate_gbps: float = 100.0,
    runs: int = 30,
    progress: Callable[[int, int], None] | None = None,
) -> ArbAnalysis:
    """`progress(done, runs)`, if given, is called after every high-table cycle."""
    if runs < 1:
        raise ValueError(f"runs must be at least 1, got {runs}")
    acct = Accounting(mode, packet_bytes, table.limit)
    fluid = mode == "byte"
    unit = UNIT if fluid else packet_bytes  # bytes per delivery
    limit_bytes = packet_bytes if (fluid and table.limit == 0) else acct.limit_bytes
    hp = [(vl, w) for vl, w in table.high if w > 0]  # weight 0 skips an entry
    lp = [(vl, w) for vl, w in table.low if w > 0]
    trace = Trace()
    lp_pos = 0

    def deliveries(weight: int) -> int:
        return weight if fluid else acct.turn(weight, 0)[0]

    def deliver_all_lp_packets() -> None:
        nonlocal lp_pos
        vl, w = lp[lp_pos]
        trace.add(vl, deliveries(w) * unit, True)  # update_stats(lp_entry)
        lp_pos = (lp_pos + 1) % len(lp)

    if not hp:  # no high table: the low table alone
        for k in range(len(lp) * runs):
            deliver_all_lp_packets()
            if progress and (k + 1) % len(lp) == 0:
                progress((k + 1) // len(lp), runs)
    limit_hp_counter = 0  # line 3
    for i in range(len(hp) * runs):  # line 4
        vl, w = hp[i % len(hp)]  # line 5: get_hp_entry
        n = deliveries(w)  # line 6: get_weight_from_entry
        for j in range(n):  # line 7
            if lp and table.limit != NO_LIMIT and limit_hp_counter >= limit_bytes:  # line 8
                deliver_all_lp_packets()  # lines 9-11
                limit_hp_counter = limit_hp_counter - limit_bytes if fluid and table.limit else 0  # line 12
            trace.add(vl, unit, j == 0)  # lines 14, 16
            limit_hp_counter += unit  # line 15
        if progress and (i + 1) % len(hp) == 0:
            progress((i + 1) // len(hp), runs)
    total = sum(trace.nbytes)
    return ArbAnalysis(
        "algorithm1",
        mode,
        packet_bytes,
        rate_gbps,
        trace.stats(table.vls, 0, len(trace), cyclic=False, rate_gbps=rate_gbps),
        total,
        total // unit,
    )
