"""All CA→CA routes at once, destination by destination, on integer arrays.

For one destination LID the LFTs form an in-tree: every switch has one out port, so
`dist[s]` (switch-to-switch links from s to the destination's switch) is computed for every
switch in a few vector steps, and each switch is visited once per destination however many
sources route through it. The VL a packet takes out of a switch depends on its in port, so
channel use is tracked per (switch, in port) state, propagated from the sources down the tree.

Destinations are processed in blocks of columns to bound memory: (S, P, B) booleans.

The routes depend on the LFTs alone, the VLs on the SL: `analyze_many` walks each block once
for several SL matrices (one per class) and shares the states the sources use among the
matrices whose sources agree, so only the VL lookups and the dependencies are per SL.
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

    def merge(self, other: RouteStats) -> None:
        """Add the routes of `other` (the same fabric's routes to other LIDs; its examples,
        (src ep, dst ep) pairs that name no LID, are left out)."""
        self.pairs += other.pairs
        self.delivered += other.delivered
        self.hops += other.hops
        self.stretch += other.stretch
        self.lost += other.lost
        self.vls |= other.vls
        self.sls |= other.sls
        self.edges = np.unique(np.concatenate([self.edges, other.edges]))

    def note(self, status: str, pairs: np.ndarray) -> None:
        """pairs: (k, 2) array of (src ep, dst ep) lost for `status`."""
        if len(pairs):
            self.lost[status] += len(pairs)
            ex = self.examples.setdefault(status, [])
            for e, d in pairs[: MAX_EXAMPLES - len(ex)]:
                ex.append((int(e), int(d)))


def analyze(ix: FabricIndex, sl_matrix: np.ndarray, block: int = 256) -> RouteStats:
    """sl_matrix: (E, E) SL of each (src ep, dst ep) pair."""
    return analyze_many(ix, [sl_matrix], block)[0]


def analyze_many(ix: FabricIndex, sl_matrices: list[np.ndarray], block: int = 256) -> list[RouteStats]:
    """One RouteStats per (E, E) SL matrix, each as `analyze` alone would give it."""
    S, E, P = ix.S, ix.E, ix.P
    stats = [RouteStats(n_channels=S * P * 16) for _ in sl_matrices]
    shortest = switch_distances(ix)
    edge_chunks: list[list[np.ndarray]] = [[] for _ in sl_matrices]
    for b0 in range(0, E, block):
        dst = np.arange(b0, min(E, b0 + block))
        for chunks, edges in zip(edge_chunks, _block(ix, sl_matrices, dst, stats, shortest), strict=True):
            chunks.append(edges)
    for st, chunks in zip(stats, edge_chunks, strict=True):
        if chunks:
            st.edges = np.unique(np.concatenate(chunks))
    return stats


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


def _block(
    ix: FabricIndex, slms: list[np.ndarray], dst: np.ndarray, stats: list[RouteStats], shortest: np.ndarray
) -> list[np.ndarray]:
    """The block's routes, walked once; per SL matrix its stats updated and its CDG edges."""
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
    cabled = (src_sw >= 0)[:, None] & pair
    # a CA port cabled to another CA port (two hosts back to back) delivers to it alone
    to_ca = (ix.ep_peer_ep >= 0)[:, None] & pair
    direct = to_ca & (ix.ep_peer_ep[:, None] == dst[None, :])
    astray = _pairs(to_ca & ~direct, dst)
    dead = _pairs(pair & ~cabled & ~to_ca, dst)
    # (E, B) hops from the source (no switch at all: none)
    d_src = np.where(cabled, dist[np.maximum(src_sw, 0)], -1) if S else np.full(pair.shape, -1)
    broken = cabled & (d_src < 0)
    why = _classify_broken(ix, out, nsw, nep, dst, broken) if broken.any() else {}
    ok = cabled & (d_src >= 0)
    n_pairs = int(pair.sum())
    walk = _Walk(ix, dst, out, nsw, inport, dist, d_src, shortest)

    per_matrix = []
    for slm, st in zip(slms, stats, strict=True):
        st.pairs += n_pairs
        st.note("dead_port", dead)
        st.note("wrong_ca", astray)
        for status, lost in why.items():
            st.note(status, lost)
        edges = []
        sls = slm[:, dst]
        if direct.any():
            _direct(ix, sls, direct, dst, st)
        for sl in np.unique(sls[ok]).tolist():
            st.sls.add(sl)
            edges.append(_channels(ix, sl, walk, walk.states(ok & (sls == sl)), st))
        per_matrix.append(np.concatenate(edges) if edges else np.zeros(0, dtype=np.int64))
    return per_matrix


def _direct(ix: FabricIndex, sls: np.ndarray, direct: np.ndarray, dst: np.ndarray, st: RouteStats) -> None:
    """The pairs of CA ports cabled to each other: delivered in no switch hop, unless the
    source injects on VL 15 or a VL its port does not run."""
    e, b = np.nonzero(direct)
    sl = sls[e, b]
    vl = ix.ep_sl2vl[e, sl].astype(np.int64)
    lost = (vl == 15) | ((ix.ep_op_vls[e] > 0) & (vl >= ix.ep_op_vls[e]))
    st.sls.update(np.unique(sl).tolist())
    st.vls.update(np.unique(vl).tolist())
    st.note("dropped", np.stack([e[lost], dst[b[lost]]], axis=1))
    if n := int((~lost).sum()):
        st.delivered += n
        st.hops[0] += n
        st.stretch[0] += n


def _pairs(mask: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """(E, B) mask -> (k, 2) array of (src ep, dst ep)."""
    e, b = np.nonzero(mask)
    return np.stack([e, dst[b]], axis=1)


@dataclass
class _States:
    """The (switch, in port, destination) states that a set of sources' packets pass. What an
    SL changes (the VL) depends on (switch, in port, out port) alone, so the per-SL work runs
    on the distinct such triples and the distinct dependencies, not on every destination's."""

    es: np.ndarray  # source endpoint of each (source, destination) pair
    bs: np.ndarray  # its destination's column in the block
    s: np.ndarray  # each state: switch,
    i: np.ndarray  # in port,
    b: np.ndarray  # destination column,
    oo: np.ndarray  # and the out port it takes
    srcs: np.ndarray  # the distinct source endpoints
    hops: list[int]  # pairs per switch-to-switch hop count, as delivered when nothing drops
    stretch: list[int]  # pairs per hop beyond the shortest, likewise
    # the distinct (switch, in port, out port) of the states
    ts: np.ndarray
    ti: np.ndarray
    to: np.ndarray
    # the distinct dependencies (a state's channel -> the next switch's): switch, in and out
    # port, the next switch, its in port and out port
    ds: np.ndarray
    di: np.ndarray
    do: np.ndarray
    dt: np.ndarray
    dj: np.ndarray
    do2: np.ndarray


@dataclass
class _Walk:
    """One block's routes (SL-independent) and the states of the source sets seen so far."""

    ix: FabricIndex
    dst: np.ndarray
    out: np.ndarray
    nsw: np.ndarray
    inport: np.ndarray
    dist: np.ndarray
    d_src: np.ndarray
    shortest: np.ndarray
    seen: list[tuple[np.ndarray, _States]] = field(default_factory=list)

    def states(self, src_ok: np.ndarray) -> _States:
        """The states of the sources in src_ok (E, B); classes whose SLs cover the same
        sources (every class with one SL for all pairs) share one walk."""
        for mask, st in self.seen:
            if np.array_equal(mask, src_ok):
                return st
        st = self._walk(src_ok)
        self.seen.append((src_ok, st))
        return st

    def _walk(self, src_ok: np.ndarray) -> _States:
        ix, out, nsw, inport, dist, shortest = self.ix, self.out, self.nsw, self.inport, self.dist, self.shortest
        S, P, B = ix.S, ix.P, len(self.dst)
        used = np.zeros((S, P, B), dtype=bool)
        sw_used = np.zeros((S, B), dtype=bool)  # used.any(axis=1), kept up
        es, bs = np.nonzero(src_ok)
        used[ix.ep_sw[es], ix.ep_swport[es], bs] = True
        sw_used[ix.ep_sw[es], bs] = True
        maxd = int(self.d_src[src_ok].max())
        for k in range(maxd, 0, -1):  # downstream, level by level
            s, b = np.nonzero((dist == k) & sw_used)
            used[nsw[s, b], inport[s, b], b] = True
            sw_used[nsw[s, b], b] = True
        s, i, b = np.nonzero(used)
        oo = out[s, b]
        tri = (s * P + i) * P + oo
        ts, rest = np.divmod(np.unique(tri), P * P)
        ti, to = np.divmod(rest, P)
        # Dependencies: this state's channel -> the next state's (switch-to-switch onward);
        # the next switch and its in port follow from (switch, out port).
        t = nsw[s, b]
        fwd = np.nonzero(t >= 0)[0]
        dep = fwd[nsw[t[fwd], b[fwd]] >= 0]
        dk, do2 = np.divmod(np.unique(tri[dep] * P + out[t[dep], b[dep]]), P)
        ds, rest = np.divmod(dk, P * P)
        di, do = np.divmod(rest, P)
        dt, dj = ix.peer_sw[ds, do].astype(np.int64), ix.peer_port[ds, do].astype(np.int64)
        hops, stretch = _hops(ix, self.dst, self.d_src, es, bs, shortest)
        return _States(es, bs, s, i, b, oo, np.unique(es), hops, stretch, ts, ti, to, ds, di, do, dt, dj, do2)


def _hops(
    ix: FabricIndex, dst: np.ndarray, d_src: np.ndarray, es: np.ndarray, bs: np.ndarray, shortest: np.ndarray
) -> tuple[list[int], list[int]]:
    """Pairs per hop count and per hop beyond the shortest, of the pairs (es, bs)."""
    d = d_src[es, bs]
    extra = d - shortest[ix.ep_sw[es], ix.ep_sw[dst[bs]]]
    return np.bincount(d).tolist(), np.bincount(extra).tolist()


def _channels(ix: FabricIndex, sl: int, walk: _Walk, w: _States, st: RouteStats) -> np.ndarray:
    """The VLs the states use with this SL, the pairs delivered; return CDG edges."""
    S, P = ix.S, ix.P
    vl_t = ix.sl2vl[w.ts, w.ti, w.to, sl].astype(np.int64)
    inj_ep = ix.ep_sl2vl[:, sl].astype(np.int64)  # per source endpoint
    st.vls.update(np.unique(vl_t).tolist())
    st.vls.update(np.unique(inj_ep[w.srcs]).tolist())

    lost_t = (vl_t == 15) | ((ix.op_vls[w.ts, w.to] > 0) & (vl_t >= ix.op_vls[w.ts, w.to]))
    lost_ep = (inj_ep == 15) | ((ix.ep_op_vls > 0) & (inj_ep >= ix.ep_op_vls))
    if lost_t.any() or lost_ep[w.srcs].any():
        es, bs, s, i, b, oo = w.es, w.bs, w.s, w.i, w.b, w.oo
        vl = ix.sl2vl[s, i, oo, sl].astype(np.int64)
        lost_here = (vl == 15) | ((ix.op_vls[s, oo] > 0) & (vl >= ix.op_vls[s, oo]))
        lost = _dropped(ix, walk.dist, walk.nsw, walk.inport, s, i, b, lost_here, es, bs, lost_ep[es])
        st.note("dropped", np.stack([es[lost], walk.dst[bs[lost]]], axis=1))
        es, bs = es[~lost], bs[~lost]
        st.delivered += len(es)
        hops, stretch = _hops(ix, walk.dst, walk.d_src, es, bs, walk.shortest)
    else:
        st.delivered += len(w.es)
        hops, stretch = w.hops, w.stretch
    st.hops.update(dict(enumerate(hops)))
    st.stretch.update(dict(enumerate(stretch)))

    ch = (w.ds * P + w.do) * 16 + ix.sl2vl[w.ds, w.di, w.do, sl].astype(np.int64)
    ch2 = (w.dt * P + w.do2) * 16 + ix.sl2vl[w.dt, w.dj, w.do2, sl].astype(np.int64)
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
) -> dict[str, np.ndarray]:
    """Why routes die: follow the switch chain (memoised per switch) to its end; status ->
    (k, 2) array of (src ep, dst ep)."""
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
    return {why: np.asarray(pairs, dtype=np.int64) for why, pairs in found.items()}
