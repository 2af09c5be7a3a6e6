"""Dragonfly groups and port roles, found from the switch graph of the fabric model alone.

This is the checker's own implementation, independent of the plugin's (which must not be
trusted to check itself): the conformance check, the verifier's reports and the simulator's
adversarial pattern use it.

Method (seed 003 §4 step 1, closed neighbourhoods): two switches of one group share their
whole group in their closed neighbourhoods, so |N[s] ∩ N[t]| >= a for a local link, while a
global link's ends share little. When small groups make that ambiguous (a switch reached by
two global links of one group forms a false triangle), the candidate cliques are resolved
by requiring a partition of the switches into cliques of equal size.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations

from .model import Fabric

ROLES = ("ca", "sw0", "terminal", "local", "global")


class NotADragonfly(ValueError):
    pass


def _switch_graph(fabric: Fabric) -> dict[int, set[int]]:
    adj: dict[int, set[int]] = {n.guid: set() for n in fabric.switches()}
    for n in fabric.switches():
        for p in n.ports.values():
            if p.remote and p.remote[0] in adj and p.remote[0] != n.guid:
                adj[n.guid].add(p.remote[0])
    return adj


def dragonfly_groups(fabric: Fabric) -> dict[int, int]:
    """Switch GUID → group number (groups numbered by their lowest switch GUID).
    Raises NotADragonfly naming the rule that fails."""
    adj = _switch_graph(fabric)
    if not adj:
        raise NotADragonfly("no switches")
    closed = {s: adj[s] | {s} for s in adj}
    score = {s: {t: len(closed[s] & closed[t]) for t in adj[s]} for s in adj}
    # a-1 = the usual number of neighbours sharing >= 3 closed-neighbourhood members
    a = Counter(sum(1 for v in score[s].values() if v >= 3) for s in adj).most_common(1)[0][0] + 1
    group_of: dict[int, int] = {}
    groups: list[set[int]] = []
    for s in sorted(adj):
        if s in group_of:
            continue
        cands = sorted(t for t, v in score[s].items() if v >= a and t not in group_of)
        found = None
        for rest in combinations(cands, a - 1):
            k = {s, *rest}
            if all(adj[x] >= k - {x} for x in k):
                # prefer the clique every member also sees as its own best candidates
                if found is None or _support(k, score, a) > _support(found, score, a):
                    found = k
        if found is None:
            raise NotADragonfly(f"switch {fabric.nodes[s].desc or hex(s)} is in no clique of "
                                f"size {a} (every group must be fully connected)")
        for x in found:
            group_of[x] = len(groups)
        groups.append(found)
    # each pair of groups joined by at least one global link
    joined = {frozenset((group_of[s], group_of[t])) for s in adj for t in adj[s]
              if group_of[s] != group_of[t]}
    g = len(groups)
    for i, j in combinations(range(g), 2):
        if frozenset((i, j)) not in joined:
            raise NotADragonfly(f"groups {i} and {j} are not joined by a global link")
    return group_of


def _support(k: set[int], score, a: int) -> int:
    return sum(score[x][y] for x in k for y in k if x != y)


def port_roles(fabric: Fabric, groups: dict[int, int] | None = None) -> dict[tuple[int, int], str]:
    """(node GUID, port) → role: ca, sw0, terminal, local or global (the plugin's roles)."""
    if groups is None:
        groups = dragonfly_groups(fabric)
    roles = {}
    for n in fabric.nodes.values():
        for p in n.ports.values():
            if n.kind == "ca":
                roles[(n.guid, p.num)] = "ca"
            elif p.num == 0:
                roles[(n.guid, 0)] = "sw0"
            elif p.remote:
                peer = fabric.nodes[p.remote[0]]
                if peer.kind != "switch":
                    roles[(n.guid, p.num)] = "terminal"
                else:
                    roles[(n.guid, p.num)] = ("local" if groups.get(peer.guid) == groups.get(n.guid)
                                              else "global")
    return roles


def port_types(fabric: Fabric) -> dict[tuple[int, int], str]:
    """OpenSM's own port types, for fabrics that are not dragonflies: ca, sw0, terminal
    (switch port to a CA) and switch (switch port to a switch)."""
    types = {}
    for n in fabric.nodes.values():
        for p, port in n.ports.items():
            if n.kind == "ca":
                types[(n.guid, p)] = "ca"
            elif p == 0:
                types[(n.guid, p)] = "sw0"
            elif port.remote:
                peer = fabric.nodes[port.remote[0]]
                types[(n.guid, p)] = "terminal" if peer.kind != "switch" else "switch"
    return types
