"""The array verifier (analyze.py) against the one-route-at-a-time reference (walk.py) on
random fabrics with random LFTs, SL2VL tables and per-pair SLs."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ibqos.fabric.model import NO_ROUTE
from ibqos.verify import build_index, iter_walks, sl_matrix, verify_fabric
from ibqos.verify.analyze import analyze, analyze_many
from ibqos.verify.pathsl import PathSLs
from verify_fabrics import Synth


@st.composite
def fabrics(draw):
    """A connected switch graph with shortest-path LFTs, some entries then scrambled."""
    s = Synth()
    nsw = draw(st.integers(1, 6))
    nports = 5
    for k in range(nsw):
        s.switch(f"sw{k}", nports)
    free = {k: list(range(1, nports + 1)) for k in range(nsw)}

    def link(a, b):
        if free[a] and free[b] and a != b:
            s.link(f"sw{a}", free[a].pop(0), f"sw{b}", free[b].pop(0))

    for k in range(1, nsw):
        link(k, draw(st.integers(0, k - 1)))
    for _ in range(draw(st.integers(0, nsw))):
        link(draw(st.integers(0, nsw - 1)), draw(st.integers(0, nsw - 1)))
    spots = [(k, p) for k in range(nsw) for p in free[k]]
    ncas = draw(st.integers(2, min(7, len(spots)))) if len(spots) >= 2 else 0
    for c, (k, p) in enumerate(draw(st.permutations(spots))[:ncas]):
        s.ca(f"h{c}", f"sw{k}", p)
    if ncas < 2:
        s.switch("x", 2)
        s.ca("hx0", "x", 1)
        s.ca("hx1", "x", 2)
    s.route_shortest()
    ca_lids = [n.ports[1].lid for n in s.f.cas()]
    rnd = draw(st.randoms(use_true_random=False))
    for sw in s.f.switches():
        for lid in ca_lids:
            if draw(st.integers(0, 9)) == 0:
                sw.lft[lid] = draw(st.sampled_from([NO_ROUTE, 0] + list(range(1, nports + 1))))
        for i in range(1, nports + 1):
            for o in range(1, nports + 1):
                if i != o:
                    sw.sl2vl[(i, o)] = tuple(rnd.randrange(4) for _ in range(16))
    for ca in s.f.cas():
        ca.sl2vl[(0, 1)] = tuple(rnd.randrange(4) for _ in range(16))
    psl = PathSLs(source="random")
    for a in ca_lids:
        for b in ca_lids:
            if a != b:
                psl.by_lids[(a, b)] = rnd.randrange(3)
    return s, psl


def _reference(fabric, psl):
    walks = list(iter_walks(fabric, sl_of=psl.sl_of(fabric)))
    lost = Counter(w.status for w in walks if w.status != "ok")
    ok = [w for w in walks if w.status == "ok"]
    hops = Counter(len(w.hops) - 1 for w in ok)
    stretch = Counter(len(w.hops) - 1 - _bfs(fabric, w.hops[0][0])[w.hops[-1][0]] for w in ok)
    vls = {w.inject_vl for w in ok} | {vl for w in ok for *_, vl in w.hops}
    edges = set()
    for w in ok:
        inner = [(g, o, vl) for g, _, o, vl in w.hops][:-1]  # switch-to-switch channels
        edges.update(itertools.pairwise(inner))
    return lost, hops, stretch, vls, edges


def _bfs(fabric, start) -> dict:
    dist, todo = {start: 0}, [start]
    for g in todo:
        for p in fabric.nodes[g].ports.values():
            if p.num and p.remote and fabric.nodes[p.remote[0]].kind == "switch" and p.remote[0] not in dist:
                dist[p.remote[0]] = dist[g] + 1
                todo.append(p.remote[0])
    return dist


def _has_cycle(edges) -> bool:
    succ: dict = {}
    for a, b in edges:
        succ.setdefault(a, []).append(b)
    color: dict = {}

    def dfs(u) -> bool:
        color[u] = 1
        for v in succ.get(u, []):
            if color.get(v) == 1 or (v not in color and dfs(v)):
                return True
        color[u] = 2
        return False

    return any(u not in color and dfs(u) for u in list(succ))


def _chan(ix, c):
    link, vl = divmod(int(c), 16)
    sw, o = divmod(link, ix.P)
    return (ix.sw_guid[sw], o, vl)


def _assert_matches(ix, stats, reference) -> None:
    lost, hops, stretch, vls, edges = reference
    a, b = np.divmod(stats.edges, stats.n_channels)
    assert {(_chan(ix, x), _chan(ix, y)) for x, y in zip(a, b, strict=True)} == edges
    assert +stats.lost == +lost
    assert +stats.hops == hops
    assert +stats.stretch == stretch
    if stats.delivered:
        assert stats.vls == vls


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fabrics(), st.integers(1, 4))
def test_array_verifier_matches_reference_walks(case, block):
    s, psl = case
    lost, hops, stretch, vls, edges = _reference(s.f, psl)

    ix = build_index(s.f)
    slm, _ = sl_matrix(ix, 0, psl)
    stats = analyze(ix, slm, block=block)
    _assert_matches(ix, stats, (lost, hops, stretch, vls, edges))
    a, b = np.divmod(stats.edges, stats.n_channels)

    r = verify_fabric(s.f, path_sls=psl)
    assert r.cdg_acyclic == (not _has_cycle(edges))
    if r.cycle:
        ids = {ix.channel_str(x): _chan(ix, x) for x in np.concatenate([a, b])}
        cyc = [ids[c] for c in r.cycle]
        assert all((cyc[k], cyc[(k + 1) % len(cyc)]) in edges for k in range(len(cyc)))
        assert len(r.cycle_routes) == len(r.cycle) and "?" not in r.cycle_routes


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fabrics(), st.integers(1, 4))
def test_one_walk_for_several_sl_matrices_matches_reference_walks_of_each(case, block):
    """analyze_many walks the routes once for all matrices (the classes of verify_per_class):
    each matrix's stats equal the reference walks with its SLs, whether its sources match
    another matrix's (one SL for every pair, states shared) or not (per-pair SLs)."""
    s, psl = case
    shifted = PathSLs(source="shifted", by_lids={k: (v + 1) % 3 for k, v in psl.by_lids.items()})
    one = [PathSLs(source=f"SL {sl}", by_lids=dict.fromkeys(psl.by_lids, sl)) for sl in (1, 2)]
    psls = [psl, shifted, *one]
    ix = build_index(s.f)
    many = analyze_many(ix, [sl_matrix(ix, 0, p)[0] for p in psls], block=block)
    for p, stats in zip(psls, many, strict=True):
        _assert_matches(ix, stats, _reference(s.f, p))
