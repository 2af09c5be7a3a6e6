"""For each dependency of a witness cycle, one CA→CA route that creates it.

A cycle of channel names alone makes an admin take it on trust; a route per dependency
(`h-g0-s1-0 -> h-g4-s2-1 on SL 0`) can be traced by hand with ibtracert.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..fabric.index import FabricIndex
from .walk import walk_route

MAX_WALKS = 200_000  # bound the search on huge fabrics; routes are a courtesy


def _decode(ix: FabricIndex, ch: int) -> tuple[int, int, int]:
    link, vl = divmod(int(ch), 16)
    s, o = divmod(link, ix.P)
    return s, o, vl


def cycle_routes(ix: FabricIndex, slm: np.ndarray, cycle: list[int]) -> list[str]:
    """One line per dependency cycle[k] -> cycle[k+1]: a route that holds the first channel
    while asking for the second, or '?' when the bounded search finds none."""
    walks = 0
    lines = []
    for k, a in enumerate(cycle):
        (s, o, va), (t, o2, vb) = _decode(ix, a), _decode(ix, cycle[(k + 1) % len(cycle)])
        want = ((ix.sw_guid[s], o, va), (ix.sw_guid[t], o2, vb))
        found = None
        for lid_k in range(1 << ix.lmc):  # the routes to each LID of an LMC (verify checks them all)
            lids = ix.at_lid_offset(lid_k).ep_lid
            for d in np.nonzero((ix.lft[s, lids] == o) & (ix.lft[t, lids] == o2))[0].tolist():
                offset = int(lids[d] - ix.ep_lid[d])
                if lid_k and not offset:
                    continue  # a port with fewer LIDs: its base route, searched at k = 0
                for e in range(ix.E):
                    if e == d or walks > MAX_WALKS:
                        continue
                    walks += 1
                    w = walk_route(ix.fabric, ix.ep[e], ix.ep[d], int(slm[e, d]), offset)
                    chans = [(g, out, vl) for g, _, out, vl in w.hops]
                    if any(pair == want for pair in itertools.pairwise(chans)):
                        to = f" (LID {int(lids[d])})" if offset else ""
                        found = f"{ix.ep_desc(e)} -> {ix.ep_desc(d)}{to} on SL {int(slm[e, d])}"
                        break
                if found or walks > MAX_WALKS:
                    break
            if found or walks > MAX_WALKS:
                break
        lines.append(found or "?")
    return lines
