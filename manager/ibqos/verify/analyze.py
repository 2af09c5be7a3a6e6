"""All CA→CA routes at once, destination by destination, on integer arrays.

For one destination LID the LFTs form an in-tree: every switch has one out port, so
`dist[s]` (switch-to-switch links from s to the destination's switch) is computed for every
switch in a few vector steps, and each switch is visited once per destination however many
sources route through it. The VL a packet takes out of a switch depends on its in port, so
channel use is tracked per (switch, in port) state, propagated from the sources down the tree.

Destinations are processed in blocks of columns to bound memory: (S, P, B) booleans.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ..fabric.index import NONE, FabricIndex
from ..fabric.model import NO_ROUTE

STATUSES = ("no_route", "dead_port", "wrong_ca", "loop", "dropped")
MAX_EXAMPLES = 10


@dataclass
class RouteStats:
    pairs: int = 0
    delivered: int = 0
    hops: Counter[int] = field(default_factory=Counter)  # switch-to-switch links -> pairs
    stretch: Counter[int] = field(default_factory=Counter)  # links beyond the shortest -> pairs
    lost: Counter[str] = field(default_factory=Counter)  # status -> pairs
    examples: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # (src ep, dst ep)
    vls: set[int] = field(default_factory=set)
    sls: set[int] = field(default_factory=set)
    edges: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    n_channels: int = 0  # channel id space (for decoding edges)

    def note(self, status: str, pairs: np.ndarray) -> None:
        """pairs: (k, 2) array of (src ep, dst ep) lost for `status`."""
        if len(pairs):
            self.lost[status] += len(pairs)
            ex = self.examples.setdefault(status, [])
            for e, d in pairs[: MAX_EXAMPLES - len(ex)]:
                ex.append((int(e), int(d)))


def analyze(ix: FabricIndex, sl_matrix: np.ndarray, block: int = 256) -> RouteStats:
    """sl_matrix: (E, E) SL of each (src ep, dst ep) pair."""
    st = RouteStats()
    S, E, P = ix.S, ix.E, ix.P
    st.n_channels = S * P * 16
    shortest = switch_distances(ix)
    edge_chunks = []
    for b0 in range(0, E, block):
        dst = np.arange(b0, min(E, b0 + block))
        edge_chunks.append(_block(ix, sl_matrix, dst, st, shortest))
    if edge_chunks:
        st.edges = np.unique(np.concatenate(edge_chunks))
    return st


def switch_distances(ix: FabricIndex) -> np.ndarray:
    """(S, S) shortest switch-to-switch link counts over the cabling, -1 if disconnected."""
    S = ix.S
    adj = np.zeros((S, S), dtype=np.float32)
    s, o = np.nonzero(ix.peer_sw >= 0)
    adj[s, ix.peer_sw[s, o]] = 1
    dist = np.where(np.eye(S, dtype=bool), 0, -1).astype(np.int16)
    frontier: np.ndarray = np.eye(S, dtype=np.float32)  # then the pairs reached at k hops
    for k in range(1, S):
        frontier = ((frontier @ adj) > 0) & (dist < 0)
        if not frontier.any():
            break
        dist[frontier] = k
        frontier = frontier.astype(np.float32)
    return dist


def _block(ix: FabricIndex, slm: np.ndarray, dst: np.ndarray, st: RouteStats, shortest: np.ndarray) -> np.ndarray:
    S, E = ix.S, ix.E
    rows = np.arange(S)[:, None]

    out = ix.lft[:, ix.ep_lid[dst]].astype(np.int64)  # (S, B)
    routed = out != NO_ROUTE
    o = np.where(routed, out, 0)
    nsw = np.where(routed, ix.peer_sw[rows, o], NONE)  # next switch or -1
    nep = np.where(routed, ix.peer_ep[rows, o], NONE)
    inport = ix.peer_port[rows, o].astype(np.int64)  # in port at the next switch
    dist = np.where(nep == dst[None, :], 0, -1)
    for _ in range(S):
        ahead = np.take_along_axis(dist, np.maximum(nsw, 0), axis=0)
        new = np.where((dist < 0) & (nsw >= 0) & (ahead >= 0), ahead + 1, dist)
        if np.array_equal(new, dist):
            break
        dist = new

    # Pairs: every source endpoint against every destination of the block.
    src_sw = ix.ep_sw
    pair = np.arange(E)[:, None] != dst[None, :]  # (E, B)
    st.pairs += int(pair.sum())
    cabled = (src_sw >= 0)[:, None] & pair
    st.note("dead_port", _pairs(pair & ~cabled, dst))
    d_src = np.where(cabled, dist[np.maximum(src_sw, 0)], -1)  # (E, B) hops from the source
    broken = cabled & (d_src < 0)
    if broken.any():
        _classify_broken(ix, out, nsw, nep, dst, broken, st)
    ok = cabled & (d_src >= 0)

    edges = []
    sls = slm[:, dst]
    for sl in np.unique(sls[ok]).tolist():
        st.sls.add(sl)
        edges.append(_channels(ix, sl, dst, out, nsw, inport, dist, d_src, ok & (sls == sl), st, shortest))
    return np.concatenate(edges) if edges else np.zeros(0, dtype=np.int64)


def _pairs(mask: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """(E, B) mask -> (k, 2) array of (src ep, dst ep)."""
    e, b = np.nonzero(mask)
    return np.stack([e, dst[b]], axis=1)


# PLR0913: the vectorised walk's arrays, passed rather than recomputed
def _channels(  # noqa: PLR0913
    ix: FabricIndex,
    sl: int,
    dst: np.ndarray,
    out: np.ndarray,
    nsw: np.ndarray,
    inport: np.ndarray,
    dist: np.ndarray,
    d_src: np.ndarray,
    src_ok: np.ndarray,
    st: RouteStats,
    shortest: np.ndarray,
) -> np.ndarray:
    """Mark the (switch, in port) states the sources with this SL use; return CDG edges."""
    S, P, B = ix.S, ix.P, len(dst)
    used = np.zeros((S, P, B), dtype=bool)
    sw_used = np.zeros((S, B), dtype=bool)  # used.any(axis=1), kept up
    es, bs = np.nonzero(src_ok)
    used[ix.ep_sw[es], ix.ep_swport[es], bs] = True
    sw_used[ix.ep_sw[es], bs] = True
    maxd = int(d_src[src_ok].max())
    for k in range(maxd, 0, -1):  # downstream, level by level
        s, b = np.nonzero((dist == k) & sw_used)
        used[nsw[s, b], inport[s, b], b] = True
        sw_used[nsw[s, b], b] = True

    s, i, b = np.nonzero(used)
    oo = out[s, b]
    vl = ix.sl2vl[s, i, oo, sl].astype(np.int64)
    inj = ix.ep_sl2vl[es, sl].astype(np.int64)
    st.vls.update(np.unique(vl).tolist())
    st.vls.update(np.unique(inj).tolist())

    lost_here = (vl == 15) | ((ix.op_vls[s, oo] > 0) & (vl >= ix.op_vls[s, oo]))
    lost_inj = (inj == 15) | ((ix.ep_op_vls[es] > 0) & (inj >= ix.ep_op_vls[es]))
    if lost_here.any() or lost_inj.any():
        lost = _dropped(ix, dist, nsw, inport, s, i, b, lost_here, es, bs, lost_inj)
        st.note("dropped", np.stack([es[lost], dst[bs[lost]]], axis=1))
        es, bs = es[~lost], bs[~lost]
    st.delivered += len(es)
    st.hops.update(dict(enumerate(np.bincount(d_src[es, bs]).tolist())))
    extra = d_src[es, bs] - shortest[ix.ep_sw[es], ix.ep_sw[dst[bs]]]
    st.stretch.update(dict(enumerate(np.bincount(extra).tolist())))

    # Edges between switch-to-switch channels: this state's channel -> the next state's.
    ch = (s * P + oo) * 16 + vl
    t = nsw[s, b]
    fwd = t >= 0
    s2, b2, ch, t = s[fwd], b[fwd], ch[fwd], t[fwd]
    onward = nsw[t, b2] >= 0
    t, b2, ch = t[onward], b2[onward], ch[onward]
    j = inport[s2[onward], b2]
    o2 = out[t, b2]
    vl2 = ix.sl2vl[t, j, o2, sl].astype(np.int64)
    ch2 = (t * P + o2) * 16 + vl2
    return np.unique(ch * (S * P * 16) + ch2)


# PLR0913: the vectorised walk's arrays, passed rather than recomputed
def _dropped(  # noqa: PLR0913
    ix: FabricIndex,
    dist: np.ndarray,
    nsw: np.ndarray,
    inport: np.ndarray,
    s: np.ndarray,
    i: np.ndarray,
    b: np.ndarray,
    lost_here: np.ndarray,
    es: np.ndarray,
    bs: np.ndarray,
    lost_inj: np.ndarray,
) -> np.ndarray:
    """Which sources lose their packet: at injection, or at any state on the way."""
    bad = np.zeros((ix.S, ix.P, dist.shape[1]), dtype=bool)
    bad[s[lost_here], i[lost_here], b[lost_here]] = True
    for k in range(1, int(dist.max()) + 1):  # upstream, level by level
        ss, bb = np.nonzero(dist == k)
        ahead = bad[nsw[ss, bb], inport[ss, bb], bb]  # same next state for every in port
        bad[ss[ahead], :, bb[ahead]] = True
    lost: np.ndarray = lost_inj | bad[ix.ep_sw[es], ix.ep_swport[es], bs]
    return lost


def _classify_broken(
    ix: FabricIndex,
    out: np.ndarray,
    nsw: np.ndarray,
    nep: np.ndarray,
    dst: np.ndarray,
    broken: np.ndarray,
    st: RouteStats,
) -> None:
    """Why routes die: follow the switch chain (memoised per switch) to its end."""
    memo: dict[tuple[int, int], str] = {}
    es, bs = np.nonzero(broken)
    outl, nswl, nepl = out.tolist(), nsw.tolist(), nep.tolist()
    src_sw = ix.ep_sw.tolist()
    found: dict[str, list[tuple[int, int]]] = {}
    for e, b in zip(es.tolist(), bs.tolist(), strict=True):
        s = src_sw[e]
        path = []
        onpath: set[int] = set()
        while (s, b) not in memo:
            if s in onpath:
                memo[(s, b)] = "loop"
                break
            onpath.add(s)
            path.append(s)
            if outl[s][b] == NO_ROUTE:
                memo[(s, b)] = "no_route"
            elif nepl[s][b] >= 0:
                memo[(s, b)] = "wrong_ca"  # dist < 0, so it is not the destination
            elif nswl[s][b] < 0:
                memo[(s, b)] = "dead_port"
            else:
                s = nswl[s][b]
        why = memo[(s, b)]
        for q in path:
            memo[(q, b)] = why
        found.setdefault(why, []).append((e, int(dst[b])))
    for why, pairs in found.items():
        st.note(why, np.asarray(pairs, dtype=np.int64))
