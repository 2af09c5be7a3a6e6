"""Channel dependency graph: acyclic or one cycle (Dally & Seitz: acyclic ⇒ no credit loop).

Edges come as int64 `a * n + b` (channel a holds a buffer while waiting for channel b).
Channels that no cycle can pass through are peeled off in vector rounds: no incoming edge,
or no outgoing edge. What survives has in- and out-degree ≥ 1 inside itself, so it is empty
exactly when the graph is acyclic, and from any survivor a walk along surviving edges must
close a cycle.
"""

from __future__ import annotations

import numpy as np


def find_cycle(edges: np.ndarray, n: int) -> list[int] | None:
    """One cycle as a list of channel ids [c0, c1, ..., ck] with ck -> c0, or None if acyclic."""
    if not len(edges):
        return None
    a, b = np.divmod(edges, n)
    self_loop = a == b
    if self_loop.any():
        return [int(a[self_loop][0])]
    while True:
        nodes, inv = np.unique(np.concatenate([a, b]), return_inverse=True)
        ai, bi = inv[: len(a)], inv[len(a) :]
        indeg = np.bincount(bi, minlength=len(nodes))
        outdeg = np.bincount(ai, minlength=len(nodes))
        keep = (indeg > 0) & (outdeg > 0)
        live = keep[ai] & keep[bi]
        if live.all():
            break
        a, b = a[live], b[live]
        if not len(a):
            return None
    succ = dict(zip(a.tolist(), b.tolist(), strict=True))  # any surviving successor will do
    order: dict[int, int] = {}
    c = int(a[0])
    while c not in order:
        order[c] = len(order)
        c = succ[c]
    walk = list(order)
    return walk[order[c] :]
