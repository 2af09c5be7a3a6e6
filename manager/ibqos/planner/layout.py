"""Where a table's entries go: slot counts per class and an evenly spread order.

A *slot* is one entry per VL of the class (DLA: the pair 2c, 2c+1, adjacent, same weight).
Slot counts follow the share (a class with a fraction f of the table's bandwidth gets about
f of its slots, so every slot carries about the same bytes: seed 000's equal-MTU entries,
Omni-Path's equal slices), raised where a latency bound needs more. The order is stride
scheduling: a class with n of N slots gets one every N/n positions, offset so classes do not
collide; with power-of-two counts this is exactly seed 001's 2/4/8... strides.
"""

from __future__ import annotations

import math


def slot_counts(shares: list[float], minimum: list[int], total: int) -> list[int] | None:
    """Largest-remainder apportionment of `total` slots to shares, each >= its minimum.
    None when the minimums alone do not fit."""
    n = len(shares)
    if sum(minimum) > total:
        return None
    s = sum(shares)
    ideal = [total * x / s for x in shares]
    counts = [max(minimum[i], 1, math.floor(ideal[i])) for i in range(n)]
    while sum(counts) > total:  # over-full: take from the most over-served
        cand = [i for i in range(n) if counts[i] > max(1, minimum[i])]
        if not cand:
            return None
        i = max(cand, key=lambda i: counts[i] / ideal[i])
        counts[i] -= 1
    while sum(counts) < total:  # give the rest to the most under-served
        i = min(range(n), key=lambda i: counts[i] / ideal[i])
        counts[i] += 1
    return counts


def spread(counts: list[int]) -> list[int]:
    """Order of slots: a list of class positions (indexes into counts), evenly interleaved."""
    n = sum(counts)
    items: list[tuple[float, int, int]] = []  # (position, -count, class)
    for ci, k in enumerate(counts):
        stride = n / k
        offset = stride * (ci + 0.5) / len(counts) if k else 0
        items.extend(((offset + j * stride) % n, -k, ci) for j in range(k))
    items.sort()
    return [ci for _, _, ci in items]


def spread_weights(total: int, k: int) -> list[int]:
    """`total` units over `k` entries, differing by at most 1, the larger ones spread evenly
    (seed 000's correction pass, distributed instead of packed at the table's end)."""
    base, extra = divmod(total, k)
    out = [base] * k
    for j in range(extra):
        out[(j * k) // extra] += 1
    return out


def packed_weights(total: int, k: int, max_weight: int = 255) -> list[int] | None:
    """`total` units over `k` entries: all at the base weight except as few entries as
    possible carrying the remainder (spread evenly). In byte accounting only the total
    counts for the share, and entries that share one weight keep the arbiter's period short."""
    base, extra = divmod(total, k)
    if base < 1 or base > max_weight:
        return None
    room = max_weight - base
    if extra and not room:
        return None
    nbig = -(-extra // room) if extra else 0
    if nbig > k:
        return None
    out = [base] * k
    for j in range(nbig):
        add = min(room, extra)
        out[(j * k) // nbig] += add
        extra -= add
    return out
