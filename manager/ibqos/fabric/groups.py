"""Dragonfly groups and port roles, found from the switch graph of the fabric model alone:
the checker's implementation of docs/groups.md (the plugin has the other, in C; both pass
docs/group-vectors.txt). The conformance check uses it to cross-check the groups dla records
(fabric/groups_in_force.py), and where there is no record; `ibqos status`, the verifier's
reports and the simulator's adversarial pattern use it directly.

Method (seed 003 §4 step 1): every group of a dragonfly is a clique inside the closed
neighbourhood of each of its switches. For each group size a that divides the switch count
(largest first), the a-cliques around each switch are the candidates, and an exact cover by
them (most constrained switch first, backtracking) whose groups are all pairwise linked is
the partition. Global links close cliques too (triangles when a = 3, any link when a = 2),
which is why the quotient is checked and the search backtracks. Then a partly populated rack
(groups of a and one maximal clique of the n mod a switches left over).

Dragonfly+ first (its groups are two-level fat trees, no cliques): the leaves of a group are
twins (the same neighbours, its spines, pairwise unlinked); each twin class of two or more,
largest first, makes a group with its spines unless it overlaps one taken; then groups of one
leaf, then near-twins (leaves that lost spines) join theirs (`_dfplus`).
Switch roles (member, leaf, spine) follow from any partition (`switch_roles`).

A degraded fabric (a dead switch, a dead local or global link) has no such cover; with
`degraded=True` a *usable* partition is accepted instead: groups of a and as few of a-1 as
the count allows, cliques or (a >= 4) cliques missing one link, every group pair linked
directly or through one other group; last, the partly populated rack at quotient diameter 2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .model import Fabric

_BUDGET = 20000  # cover branches per group size tried


class NotADragonfly(ValueError):
    pass


@dataclass(frozen=True)
class Partition:
    groups: dict[int, int]  # switch GUID -> group, numbered by lowest GUID
    exact: bool  # cliques of one size, every group pair linked


def switch_graph(fabric: Fabric) -> dict[int, set[int]]:
    """Switch GUID -> linked switches, keyed in GUID order: the searches below take switches
    in this order where the spec leaves ties (the most constrained switch first), as dla does
    in OpenSM's switch table, so the partition does not depend on the order the model lists
    switches in (the live reader's discovery order, a dump's)."""
    adj: dict[int, set[int]] = {g: set() for g in sorted(n.guid for n in fabric.switches())}
    for n in fabric.switches():
        for p in n.ports.values():
            if p.remote and p.remote[0] in adj and p.remote[0] != n.guid:
                adj[n.guid].add(p.remote[0])
    return adj


def usable(adj: dict[int, set[int]], groups: dict[int, int]) -> str | None:
    """The rule a partition breaks (docs/groups.md, "Usable"), None if it breaks none: every
    member pair of a group within two local hops (in a leaf/spine group: every pair of leaves,
    and every pair of spines), every group pair within one intermediate group."""
    members: dict[int, list[int]] = {}
    for s in sorted(groups):
        members.setdefault(groups[s], []).append(s)
    role = _roles(adj, groups, {})
    for _, m in sorted(members.items()):
        for i, u in enumerate(m):
            for v in m[i + 1 :]:
                if role[u] != "member" and role[u] != role[v]:
                    continue  # a leaf reaches a spine it lost through the others
                if v not in adj[u] and not any(u in adj[w] and v in adj[w] for w in m):
                    return f"switches {hex(u)} and {hex(v)} of one group are more than two local hops apart"
    if not _quotient_ok(adj, groups, len(members), True):
        return "two groups are joined neither by a global link nor through a third group"
    return None


def _cliques(adj: dict[int, set[int]], v: int, size: int) -> list[frozenset[int]]:
    """Cliques of `size` switches containing v."""
    out: list[frozenset[int]] = []

    def grow(clique: list[int], cands: list[int]) -> None:
        if len(clique) == size:
            out.append(frozenset(clique))
            return
        for i, c in enumerate(cands):
            if len(clique) + len(cands) - i < size:
                return
            grow(clique + [c], [d for d in cands[i + 1 :] if d in adj[c]])

    grow([v], sorted(adj[v]))
    return out


def _max_clique(adj: dict[int, set[int]], v: int) -> int:
    """Size of the largest clique containing v (branch and bound)."""
    best = [1]

    def grow(size: int, cands: list[int]) -> None:
        best[0] = max(best[0], size)
        for i, c in enumerate(cands):
            if size + len(cands) - i <= best[0]:
                return
            grow(size + 1, [d for d in cands[i + 1 :] if d in adj[c]])

    grow(1, sorted(adj[v]))
    return best[0]


def _near_cliques(adj: dict[int, set[int]], size: int) -> list[frozenset[int]]:
    """Sets of `size` switches linked all but one pair: a group that lost a local link."""
    out = set()
    for u in adj:
        for w in adj[u]:
            for v in adj[w]:
                if v <= u or v in adj[u]:
                    continue
                common = sorted(adj[u] & adj[v])
                if len(common) + 2 < size:
                    continue
                sub = {c: adj[c] & set(common) for c in common}
                for q in _cliques({**sub, -1: set(common)}, -1, size - 1):
                    out.add(frozenset(q - {-1}) | {u, v})
    return sorted(out, key=sorted)


def _maximal(adj: dict[int, set[int]], q: frozenset[int]) -> bool:
    first = next(iter(q))
    return not any(q - {w} <= adj[w] for w in adj[first] if w not in q)


def _quotient_ok(adj: dict[int, set[int]], group_of: dict[int, int], ngroups: int, within_two: bool) -> bool:
    linked: list[set[int]] = [set() for _ in range(ngroups)]
    for s, nbrs in adj.items():
        for t in nbrs:
            if group_of[s] != group_of[t]:
                linked[group_of[s]].add(group_of[t])
    for x in range(ngroups):
        for y in range(x + 1, ngroups):
            if y not in linked[x] and not (within_two and linked[x] & linked[y]):
                return False
    return True


def _cover(
    adj: dict[int, set[int]], cands: dict[int, list[frozenset[int]]], a: int, small: int, quotient: str
) -> dict[int, int] | None:
    """An exact cover by the candidates (most constrained switch first), with `small` groups
    smaller than a, whose quotient is `complete`, `within_two` or `exactly_two` (within two
    and not complete: the complete reading was tried before)."""
    group_of: dict[int, int] = {}
    groups: list[frozenset[int]] = []
    budget = [_BUDGET]

    def free(q: frozenset[int], small_left: int) -> bool:
        return (len(q) == a or small_left > 0) and not any(x in group_of for x in q)

    def quotient_ok() -> bool:
        if quotient == "complete":
            return _quotient_ok(adj, group_of, len(groups), False)
        ok = _quotient_ok(adj, group_of, len(groups), True)
        return ok and not (quotient == "exactly_two" and _quotient_ok(adj, group_of, len(groups), False))

    def rec(small_left: int) -> bool:
        if len(group_of) == len(adj):
            return quotient_ok()
        budget[0] -= 1
        if budget[0] < 0:
            return False
        options: list[frozenset[int]] | None = None
        for v in adj:
            if v in group_of:
                continue
            opts = [q for q in cands[v] if free(q, small_left)]
            if options is None or len(opts) < len(options):
                options = opts
                if not opts:
                    return False
        for q in options or ():  # some switch is ungrouped (checked above): options is set
            for x in q:
                group_of[x] = len(groups)
            groups.append(q)
            if rec(small_left - (len(q) < a)):
                return True
            groups.pop()
            for x in q:
                del group_of[x]
        return False

    return group_of if rec(small) else None


def _partial_rack(adj: dict[int, set[int]], top: int, quotient: str) -> dict[int, int] | None:
    """Groups of a and one group of the n % a switches left over (2 .. a-2 of them, a maximal
    clique): a rack only partly populated. For every a from the largest clique down to 4."""
    n = len(adj)
    for a in range(top, 3, -1):
        rest = n % a
        if rest < 2 or rest > a - 2:
            continue
        cands = {v: _cliques(adj, v, a) + [q for q in _cliques(adj, v, rest) if _maximal(adj, q)] for v in adj}
        found = _cover(adj, cands, a, 1, quotient)
        if found:
            return found
    return None


class Ambiguous(NotADragonfly):
    """A fabric with leaf twins whose dragonfly+ reading is ambiguous (docs/groups.md, step 0)."""


def _leaf_like(adj: dict[int, set[int]], v: int, taken: dict[int, int]) -> bool:
    """v has neighbours, none of them in a group, pairwise unlinked: the leaf side of a group."""
    nb = adj[v]
    return bool(nb) and not any(s in taken for s in nb) and not any(adj[s] & nb for s in nb)


def _dfplus(adj: dict[int, set[int]]) -> tuple[dict[int, int], bool] | None:
    """Dragonfly+ groups (docs/groups.md, step 0): leaf twin classes (two or more switches with
    one neighbour set, its members pairwise unlinked), largest first then lowest switch, each
    with its neighbours as spines, skipped where it would overlap a group taken; then groups
    of one leaf among the switches left over; then the near-twins (every neighbour a spine of
    one group) join it as leaves. A reading that leaves switches in no group is read again
    with the first class it took whose spines a left-over switch all neighbours set aside (it
    was spines: spines without global links are twins too), once per class; failing that,
    with each class the first reading took set aside alone. (groups,
    complete) or None unless every switch is in a group and there are two groups or more (the
    quotient is the caller's); complete is False when a leaf lacks one of its group's spines.
    Raises Ambiguous with the first reading's reason instead of None where the spec names one."""
    classes: dict[frozenset[int], list[int]] = {}
    for v in sorted(adj):
        classes.setdefault(frozenset(adj[v]), []).append(v)
    order = sorted(classes.items(), key=lambda kv: (-len(kv[1]), kv[1][0]))
    aside: set[frozenset[int]] = set()
    first: Ambiguous | None = None
    took: list[frozenset[int]] | None = None
    for _ in range(len(order) + 1):
        taken: list[frozenset[int]] = []
        group_of: dict[int, int] = {}
        try:
            found = _dfplus_reading(adj, order, aside, taken, group_of)
        except Ambiguous as e:
            found, first = None, first or e
        if found:
            return found
        took = taken if took is None else took
        side = next((nb for nb in taken if any(v not in group_of and nb < adj[v] for v in adj)), None)
        if side is None:
            break
        aside.add(side)
    # spines that share their remote neighbours are twins too, with a neighbour set no
    # left-over switch holds: then each class the first reading took is set aside alone
    for side in took or []:
        try:
            found = _dfplus_reading(adj, order, {side}, [], {})
        except Ambiguous:
            found = None
        if found:
            return found
    if first:
        raise first
    return None


def _dfplus_reading(
    adj: dict[int, set[int]],
    order: list[tuple[frozenset[int], list[int]]],
    aside: set[frozenset[int]],
    taken: list[frozenset[int]],
    group_of: dict[int, int],
) -> tuple[dict[int, int], bool] | None:
    """One reading of _dfplus: the twin classes in `order` whose neighbour set is not set
    aside; the classes it takes as leaf sides go to `taken`, the groups to `group_of`."""
    spines: set[int] = set()
    ng = 0
    for nb, leaves in order:
        if len(leaves) < 2 or nb in aside or any(x in group_of for x in leaves):
            continue
        if not _leaf_like(adj, leaves[0], group_of):
            continue
        for x in (*leaves, *nb):
            group_of[x] = ng
        spines |= nb
        taken.append(nb)
        ng += 1
    if not ng:
        return None
    # groups of one leaf: a left-over leaf-like switch whose neighbours no other one's hold
    cand = {v for v in sorted(adj) if v not in group_of and _leaf_like(adj, v, group_of)}
    for v in sorted(cand):
        if any(u != v and adj[v] < adj[u] for u in cand):
            continue
        clash = next((w for w in sorted(adj[v] | {v}) if w in group_of), None)
        if clash is not None:
            other = min(x for x in group_of if group_of[x] == group_of[clash] and x not in spines)
            raise Ambiguous(
                f"the dragonfly+ reading is ambiguous: switches {hex(v)} and {hex(other)} each read as the one "
                f"leaf of a group, and both groups hold switch {hex(clash)}"
            )
        for x in (v, *adj[v]):
            group_of[x] = ng
        spines |= adj[v]
        ng += 1
    # near-twins: a left-over switch all of whose neighbours are spines of one group
    near = {}
    for v in sorted(adj):
        if v in group_of or not adj[v] or not adj[v] <= spines:
            continue
        ks = {group_of[s] for s in adj[v]}
        if len(ks) > 1:
            a, b = sorted(adj[v])[0], next(s for s in sorted(adj[v]) if group_of[s] != group_of[min(adj[v])])
            raise Ambiguous(f"switch {hex(v)} is linked only to spines, of two groups (spines {hex(a)} and {hex(b)})")
        near[v] = ks.pop()
    group_of.update(near)
    if ng < 2 or len(group_of) != len(adj):
        return None
    count = {k: sum(1 for s in spines if group_of[s] == k) for k in range(ng)}
    return group_of, all(len(adj[v]) == count[k] for v, k in near.items())


def _roles(adj: dict[int, set[int]], groups: dict[int, int], hosts: dict[int, int]) -> dict[int, str]:
    """Switch roles (docs/groups.md, "Switch roles"): per group, its local links 2-coloured
    component by component; the spine side holds the global links (both sides holding some, or
    an odd cycle: member); a component without any takes the side with more hosts as leaves
    (ties: the side of its lowest switch). A group needs a leaf and a spine, else member."""
    role = dict.fromkeys(adj, "member")
    members: dict[int, list[int]] = {}
    for s in sorted(adj):
        members.setdefault(groups[s], []).append(s)
    for m in members.values():
        if len(m) < 2:
            continue
        side: dict[int, str] = {}
        ok = True
        for start in m:
            if start in side or not ok:
                continue
            colour = {start: 0}
            queue = [start]
            for u in queue:
                for w in sorted(adj[u]):
                    if groups[w] != groups[u]:
                        continue
                    if w not in colour:
                        colour[w] = 1 - colour[u]
                        queue.append(w)
                    elif colour[w] == colour[u]:
                        ok = False
            glob = [any(groups[w] != groups[u] for u in queue if colour[u] == c for w in adj[u]) for c in (0, 1)]
            if glob[0] and glob[1]:
                ok = False
            load = [sum(hosts.get(u, 0) for u in queue if colour[u] == c) for c in (0, 1)]
            spine = 0 if glob[0] else 1 if glob[1] else 0 if load[1] > load[0] else 1
            for u in queue:
                side[u] = "spine" if colour[u] == spine else "leaf"
        if ok and {"leaf", "spine"} <= set(side.values()):
            role.update(side)
    return role


def switch_roles(fabric: Fabric, groups: dict[int, int]) -> dict[int, str]:
    """Switch GUID → member, leaf or spine (roles.SWITCH_ROLES) under the partition `groups`."""
    hosts = {
        n.guid: sum(1 for p in n.ports.values() if p.remote and fabric.nodes[p.remote[0]].kind != "switch")
        for n in fabric.switches()
    }
    return _roles(switch_graph(fabric), groups, hosts)


def find_groups(fabric: Fabric, *, degraded: bool = True) -> Partition:
    """The partition docs/groups.md defines, tried in its order: exact; a partly populated
    rack; (degraded=True) degraded; a partly populated rack on a degraded fabric. Raises
    NotADragonfly."""
    adj = switch_graph(fabric)
    if not adj:
        raise NotADragonfly("no switches")
    n = len(adj)
    ambiguous = None
    try:
        plus = _dfplus(adj)
    except Ambiguous as e:
        plus, ambiguous = None, e
    if plus:
        labels, complete = plus
        ng = max(labels.values()) + 1
        if complete and _quotient_ok(adj, labels, ng, False):
            return _numbered(adj, labels, True)
        if degraded and _quotient_ok(adj, labels, ng, True) and (complete or usable(adj, labels) is None):
            return _numbered(adj, labels, False)
    found: dict[int, int] | None = None
    exact = False
    top = max(_max_clique(adj, v) for v in adj)
    edges = sum(map(len, adj.values())) // 2
    for a in range(top, 0, -1):
        g = n // a
        if n % a or edges - g * a * (a - 1) // 2 < g * (g - 1) // 2:
            continue
        cands = {v: _cliques(adj, v, a) for v in adj}
        found = _cover(adj, cands, a, 0, "complete")
        if found:
            exact = True
            break
    if not found:
        found = _partial_rack(adj, top, "complete")
        exact = found is not None  # as good as exact: every group a clique, every pair linked
    if not found and degraded:
        for a in range(top + 1, 1, -1):
            g = math.ceil(n / a)
            small = g * a - n
            if 2 * small > g or (a > top and a < 4):
                continue
            near = _near_cliques(adj, a) if a >= 4 else []
            cands = {
                v: _cliques(adj, v, a)
                + [q for q in near if v in q]
                + [q for q in _cliques(adj, v, a - 1) if small and _maximal(adj, q)]
                for v in adj
            }
            found = _cover(adj, cands, a, small, "within_two")
            if found:
                break
        if not found:
            found = _partial_rack(adj, top, "exactly_two")
    if not found:
        raise ambiguous or NotADragonfly(_why(adj, top, degraded))
    return _numbered(adj, found, exact)


def _numbered(adj: dict[int, set[int]], found: dict[int, int], exact: bool) -> Partition:
    """Groups renumbered in order of their lowest switch GUID."""
    order: dict[int, int] = {}
    for s in sorted(adj):
        order.setdefault(found[s], len(order))
    return Partition({s: order[found[s]] for s in adj}, exact)


def _why(adj: dict[int, set[int]], top: int, degraded: bool) -> str:
    lone = [s for s in sorted(adj) if not _cliques(adj, s, max(top, 2))]
    if lone:
        return f"switch {hex(lone[0])} is in no clique of size {max(top, 2)} (every group must be fully connected)"
    return "some groups are not joined by a global link: no partition into cliques of one size " + (
        "links every pair of groups, directly or through a third" if degraded else "links every pair of groups"
    )


def dragonfly_groups(fabric: Fabric, *, degraded: bool = False) -> dict[int, int]:
    """Switch GUID → group number (groups numbered by their lowest switch GUID); with
    degraded=True a usable partition of a fabric that lost links or switches is accepted.
    Raises NotADragonfly naming the rule that fails."""
    return find_groups(fabric, degraded=degraded).groups


def port_roles(fabric: Fabric, groups: dict[int, int] | None = None) -> dict[tuple[int, int], str]:
    """(node GUID, port) → role: ca, sw0, terminal, local or global (docs/groups.md, "Port
    roles"); a switch port cabled back into its own switch has none. A router's port takes
    the terminal role's tables: dla leaves it to OpenSM's qos_rtr_*, rendered from that role."""
    if groups is None:
        groups = find_groups(fabric).groups
    roles = {}
    for n in fabric.nodes.values():
        for p in n.ports.values():
            if n.kind == "ca":
                roles[(n.guid, p.num)] = "ca"
            elif n.kind == "router":
                if p.remote:
                    roles[(n.guid, p.num)] = "terminal"
            elif p.num == 0:
                roles[(n.guid, 0)] = "sw0"
            elif p.remote:
                peer = fabric.nodes[p.remote[0]]
                if peer.kind != "switch":
                    roles[(n.guid, p.num)] = "terminal"
                elif peer.guid != n.guid:  # a cable looped back into its switch has no role
                    roles[(n.guid, p.num)] = "local" if groups.get(peer.guid) == groups.get(n.guid) else "global"
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
