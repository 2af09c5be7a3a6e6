"""Closed-form long-run shares under saturation (docs/arbiter.md, Accounting modes).

Each entry earns its weight every visit in `byte` mode (the deficit carries) and whole
packets in `packet` mode; the low table gets one turn per `high_bytes_per_low_turn` bytes of
high traffic. The planner uses this to discard candidates before the exact analysis; the
tests use it as an independent check of the exact engine.
"""

from __future__ import annotations

from .accounting import LIMIT_UNIT, UNIT
from .table import NO_LIMIT, ArbTable


def entry_bytes(weight: int, size: int, mode: str) -> int:
    if mode == "byte":
        return UNIT * weight
    return size * max(1, -(-UNIT * weight // size))


def high_bytes_per_low_turn(limit: int, size: int, mode: str) -> int:
    if limit == 0:
        return size  # one packet, then the low table
    if mode == "packet":
        return size * -(-LIMIT_UNIT * limit // size)
    return LIMIT_UNIT * limit  # the counter's overshoot carries


def long_run_shares(table: ArbTable, size: int = 4096, mode: str = "byte") -> dict[int, float]:
    """VL -> share in % (VLs that never send get 0)."""
    hi: dict[int, int] = {}
    lo: dict[int, int] = {}
    for vl, w in table.high:
        if w:
            hi[vl] = hi.get(vl, 0) + entry_bytes(w, size, mode)
    nlo = 0
    for vl, w in table.low:
        if w:
            lo[vl] = lo.get(vl, 0) + entry_bytes(w, size, mode)
            nlo += 1
    out = {vl: 0.0 for vl in table.vls}
    if not hi and not lo:
        return out
    if not lo or (hi and table.limit == NO_LIMIT):
        f_high = 1.0
    elif not hi:
        f_high = 0.0
    else:
        h = high_bytes_per_low_turn(table.limit, size, mode)
        b = sum(lo.values()) / nlo
        f_high = h / (h + b)
    for part, frac in ((hi, f_high), (lo, 1.0 - f_high)):
        total = sum(part.values())
        for vl, nbytes in part.items():
            if frac:
                out[vl] += 100.0 * frac * nbytes / total
    return out
