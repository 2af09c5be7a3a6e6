"""Seed 002 Table 1, configurations A and B, as concrete tables (shared by the tests).

Both interleave SL0 on every second high entry and SL1/SL2 on every fourth (0,1,0,2,...),
64 high entries, SL3 alone in the low table, VLHighLimit 1, VL = SL. Per-entry weights are
the paper's ranges with its per-SL totals: A 264/158/106 + 6, B 704/432/288 + 2.
"""

from ibqos.arbiter import ArbTable


def _table(w0, w1, w2, low):
    high = []
    for k in range(16):
        high += [(0, w0[2 * k]), (1, w1[k]), (0, w0[2 * k + 1]), (2, w2[k])]
    return ArbTable(high, [(3, low)], 1)


CONFIG_A = _table([9] * 8 + [8] * 24, [9] * 2 + [10] * 14, [6] * 6 + [7] * 10, 6)
CONFIG_B = _table([22] * 32, [27] * 16, [18] * 16, 2)


def byte_shares(totals_high: list[int], low_weight: int, limit: int = 1) -> list[float]:
    """Hand formula for byte accounting: per 4096*limit bytes of high traffic the low entry
    sends 64*low_weight bytes; the high VLs split their part by total weight."""
    high_bytes, low_bytes = 4096 * limit, 64 * low_weight
    f_high = high_bytes / (high_bytes + low_bytes)
    s = sum(totals_high)
    return [100 * f_high * t / s for t in totals_high] + [100 * (1 - f_high)]
