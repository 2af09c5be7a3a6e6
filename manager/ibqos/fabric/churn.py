"""LFT churn after a fault: which pristine entries a fault's routes crossed, and which entries
a re-sweep changed. Shared by bench/churn.py (the churn table) and the plugin's fault tests
(no collateral re-routing), so both judge a fault the same way."""

from __future__ import annotations

from ibqos.fabric.model import NO_ROUTE, Fabric
from ibqos.faultspec import ResolvedFault


def _next_switch(fabric: Fabric, guid: int, port: int) -> int | None:
    p = fabric.nodes[guid].ports.get(port)
    if p is None or p.remote is None:
        return None
    peer = fabric.nodes.get(p.remote[0])
    return peer.guid if peer is not None and peer.kind == "switch" else None


def crossed_entries(pristine: Fabric, fault: ResolvedFault) -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
    """(switch GUID, LID) of the pristine entries whose route crosses the fault, and of those
    that take the failed element as their first hop."""
    by_name = {n.desc: n.guid for n in pristine.nodes.values()}
    dead = by_name[fault.node]
    links: set[tuple[int, int]] = set()
    if fault.port is not None:  # a link fault
        links.add((dead, fault.port))
        peer = pristine.nodes[dead].ports[fault.port].remote
        if peer is not None:
            links.add(peer)
    switches = [n for n in pristine.switches() if not (fault.short_kind == "switch" and n.guid == dead)]
    top = max(len(n.lft) for n in switches)
    out, direct = set(), set()
    for lid in range(1, top):
        memo: dict[int, bool] = {}
        for s in switches:
            path: list[int] = []
            g: int | None = s.guid
            hit = False
            while g is not None and g not in memo and len(path) <= len(switches):
                path.append(g)
                if fault.short_kind == "switch" and g == dead:
                    hit = True
                    break
                port = pristine.nodes[g].route(lid)
                if port in (NO_ROUTE, 0):
                    break
                if (g, port) in links:
                    hit = True
                    break
                g = _next_switch(pristine, g, port)
            if g in memo and not hit:
                hit = memo[g]
            for p in path:
                memo[p] = hit
            first = pristine.nodes[s.guid].route(lid)
            if hit and first != NO_ROUTE:
                out.add((s.guid, lid))
                if (s.guid, first) in links or (
                    fault.short_kind == "switch" and _next_switch(pristine, s.guid, first) == dead
                ):
                    direct.add((s.guid, lid))
    return out, direct


def lft_changes(before: Fabric, after: Fabric) -> tuple[set[tuple[int, int]], set[tuple[int, int]]]:
    """Changed (switch GUID, LID) entries and (switch GUID, block) LFT blocks, over the
    switches both fabrics hold."""
    entries = set()
    for n in before.switches():
        m = after.nodes.get(n.guid)
        if m is None:
            continue
        for lid in range(1, max(len(n.lft), len(m.lft))):
            if n.route(lid) != m.route(lid):
                entries.add((n.guid, lid))
    return entries, {(g, lid // 64) for g, lid in entries}
