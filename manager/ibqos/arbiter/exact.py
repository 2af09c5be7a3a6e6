"""Exact saturation analysis: run the arbiter state machine of docs/arbiter.md until its
state repeats, then compute every statistic over exactly one period.

The state is sampled each time the high table wraps (or the low table, when the high table
is empty): (high deficits, low position, low deficits, hi_count). The machine is
deterministic, so the first repeated sample closes a period
the runs between the two
samples repeat forever, and shares over them are the exact long-run shares.
"""

from __future__ import annotations

from collections.abc import Sequence

from .accounting import Accounting
from .result import ArbAnalysis
from .table import NO_LIMIT, ArbTable
from .trace import Trace

MAX_WRAPS = 200_000
MAX_RUNS = 2_000_000  # runs recorded before giving up (memory: a few tens of MB)


class NoPeriodError(ValueError):
    pass


def analyze_exact(
    table: ArbTable, packet_bytes: int = 4096, mode: str = "byte", rate_gbps: float = 100.0, *, max_runs: int = MAX_RUNS
) -> ArbAnalysis:
    """Raises NoPeriodError when the period is longer than `max_runs` runs of packets."""
    acct = Accounting(mode, packet_bytes, table.limit)
    hi = [(vl, w) for vl, w in table.high if w > 0]
    lo = [(vl, w) for vl, w in table.low if w > 0]
    vls = table.vls
    if not hi and not lo:
        return ArbAnalysis(
            "exact",
            mode,
            packet_bytes,
            rate_gbps,
            Trace().stats(vls, 0, 0, cyclic=True, rate_gbps=rate_gbps),
            0,
            0,
            ["both tables are empty: nothing is sent"],
        )
    trace, start, end = _run_to_period(hi, lo, table.limit, acct, max_runs)
    window = sum(trace.nbytes[start:end])
    notes = []
    if hi and lo and table.limit == NO_LIMIT:
        notes.append(
            "VLHighLimit 255: the low table is served only when the high table is idle (never, under saturation)"
        )
    return ArbAnalysis(
        "exact",
        mode,
        packet_bytes,
        rate_gbps,
        trace.stats(vls, start, end, cyclic=True, rate_gbps=rate_gbps),
        window,
        window // packet_bytes,
        notes,
    )


def _run_to_period(
    hi: Sequence[tuple[int, int]], lo: Sequence[tuple[int, int]], limit: int, acct: Accounting, max_runs: int
) -> tuple[Trace, int, int]:
    # The hot loop of the planner: kept flat (no per-packet calls) on purpose.
    size = acct.size
    limit_bytes = acct.limit_bytes
    trace = Trace()
    t_vl, t_bytes, t_visit = trace.vl, trace.nbytes, trace.visit
    hi_vl = [vl for vl, _ in hi]
    hi_w = [w for _, w in hi]
    hi_def = [0] * len(hi)
    lo_vl = [vl for vl, _ in lo]
    lo_w = [w for _, w in lo]
    lo_def = [0] * len(lo)
    nlo = len(lo)
    lo_pos = 0
    hi_count = 0
    low_can_interrupt = bool(lo) and limit != NO_LIMIT
    seen: dict[tuple[object, ...], int] = {}
    turn = acct.turn  # packets of one turn, and the entry's deficit after it

    if not hi:  # only the low table: rule 3 forever
        for _ in range(MAX_WRAPS * max(nlo, 1)):
            if lo_pos == 0:
                if len(t_vl) > max_runs:
                    raise NoPeriodError(f"no period within {max_runs} runs of packets")
                key = tuple(lo_def)
                if key in seen:
                    return trace, seen[key], len(t_vl)
                seen[key] = len(t_vl)
            n, lo_def[lo_pos] = turn(lo_w[lo_pos], lo_def[lo_pos])
            if n:
                t_vl.append(lo_vl[lo_pos])
                t_bytes.append(n * size)
                t_visit.append(True)
            lo_pos = (lo_pos + 1) % nlo
        raise NoPeriodError(f"no period within {MAX_WRAPS} low-table cycles")

    nhi = len(hi)
    after_low_turn = acct.after_low_turn
    for _ in range(MAX_WRAPS):
        state = (tuple(hi_def), lo_pos, tuple(lo_def), hi_count)
        if len(t_vl) > max_runs:
            raise NoPeriodError(f"no period within {max_runs} runs of packets")
        if state in seen:
            return trace, seen[state], len(t_vl)
        seen[state] = len(t_vl)
        for i in range(nhi):  # one high-table cycle
            left, hi_def[i] = turn(hi_w[i], hi_def[i])
            if not left:
                continue
            vl = hi_vl[i]
            if not low_can_interrupt:
                t_vl.append(vl)
                t_bytes.append(left * size)
                t_visit.append(True)
                continue
            visit = True
            while left:
                if hi_count >= limit_bytes:  # rule 1: one low turn
                    n, lo_def[lo_pos] = turn(lo_w[lo_pos], lo_def[lo_pos])
                    if n:
                        t_vl.append(lo_vl[lo_pos])
                        t_bytes.append(n * size)
                        t_visit.append(True)
                    lo_pos += 1
                    if lo_pos == nlo:
                        lo_pos = 0
                    hi_count = after_low_turn(hi_count)
                    continue
                k = -(-(limit_bytes - hi_count) // size)  # rule 2, up to the limit
                k = min(k, left)
                t_vl.append(vl)
                t_bytes.append(k * size)
                t_visit.append(visit)
                visit = False
                hi_count += k * size
                left -= k
    raise NoPeriodError(f"no period within {MAX_WRAPS} high-table cycles")
