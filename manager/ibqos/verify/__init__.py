"""Verify a fabric model: every CA→CA route, hop counts, VLs, and deadlock freedom.

The verifier reads only the fabric model (dumped or read back); it never asks the routing
engine what it meant to do.

    from ibqos.verify import verify_fabric, iter_routes
    report = verify_fabric(fabric)                 # SL 0 for every pair
    report = verify_fabric(fabric, path_sls=psl)   # per-path SLs from the SA
    for src, dst, hops in iter_routes(fabric):     # hops: [(switch GUID, in, out, VL), ...]
        ...
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError
from ..fabric.index import FabricIndex, build_index
from ..fabric.model import Fabric
from .analyze import STATUSES, RouteStats, analyze_many
from .cdg import find_cycle
from .pathsl import PathSLs
from .report import LostRoute, VerifyReport
from .walk import Route, Walk, iter_routes, iter_walks, walk_route
from .witness import cycle_routes

if TYPE_CHECKING:
    from ..plan import Plan

__all__ = [
    "PathSLs",
    "Route",
    "VerifyReport",
    "Walk",
    "build_index",
    "iter_routes",
    "iter_walks",
    "sl_matrix",
    "verify_fabric",
    "verify_per_class",
    "verify_sls",
    "walk_route",
    "worst",
]


def sl_matrix(ix: FabricIndex, sl: int, path_sls: PathSLs | None) -> tuple[np.ndarray, int]:
    """(E, E) SL per (src, dst) endpoint pair, and how many pairs fell back to `sl`. One SL
    for every pair is a read-only view of one byte (not E² of them: 100 MB at 10,000 CAs)."""
    if path_sls is None:
        return np.broadcast_to(np.uint8(sl), (ix.E, ix.E)), 0
    m = np.full((ix.E, ix.E), sl, dtype=np.uint8)
    found = np.zeros((ix.E, ix.E), dtype=bool)
    for (slid, dlid), v in path_sls.by_lids.items():
        e, d = ix.lid_to_ep.get(slid), ix.lid_to_ep.get(dlid)
        if e is not None and d is not None:
            m[e, d] = v
            found[e, d] = True
    np.fill_diagonal(found, True)
    return m, int((~found).sum())


def verify_fabric(fabric: Fabric, *, sl: int = 0, path_sls: PathSLs | None = None, block: int = 256) -> VerifyReport:
    return verify_sls(fabric, [sl], path_sls=path_sls, block=block)[0]


def verify_sls(
    fabric: Fabric, sls: list[int], *, path_sls: PathSLs | None = None, block: int = 256
) -> list[VerifyReport]:
    """One report per SL of `sls`, each as `verify_fabric(fabric, sl=...)` gives it; the
    routes are walked once for all (they do not depend on the SL). seconds: the shared time."""
    t0 = time.perf_counter()
    for sl in sls:
        if not 0 <= sl <= 15:
            raise InputError(f"SL {sl} out of range 0..15", field="sl")
    ix = build_index(fabric)
    if ix.E < 2:
        raise InputError(f"{ix.E} CA ports with a LID and a link: nothing to route", file=fabric.read_from)
    matrices = [sl_matrix(ix, sl, path_sls) for sl in sls]
    stats = analyze_many(ix, [m for m, _ in matrices], block=block)
    if ix.lmc and path_sls is None:
        # a port with LMC l owns 2^l LIDs, each routed by the LFTs on its own path: the routes
        # to every one of them, on the pair's one SL (path records name base LIDs only)
        for k in range(1, 1 << ix.lmc):
            more = analyze_many(ix.at_lid_offset(k), [m for m, _ in matrices], block=block)
            for st, extra in zip(stats, more, strict=True):
                st.merge(extra)
    reports = [
        _report(fabric, ix, sl, path_sls, slm, missing, st)
        for sl, (slm, missing), st in zip(sls, matrices, stats, strict=True)
    ]
    seconds = round(time.perf_counter() - t0, 3)
    for r in reports:
        r.seconds = seconds
    return reports


def _report(
    fabric: Fabric,
    ix: FabricIndex,
    sl: int,
    path_sls: PathSLs | None,
    slm: np.ndarray,
    missing: int,
    st: RouteStats,
) -> VerifyReport:
    warnings = list(ix.warnings)
    # a cabled CA port the SM gave no LID is no endpoint (fabric.index) and in no pair: said,
    # or 'no unreachable pairs' would hide a host nothing can reach
    no_lid = [
        f"{n.desc or hex(n.guid)}:{p.num}" for n in fabric.cas() for p in n.ports.values() if p.remote and not p.lid
    ]
    if no_lid:
        warnings.append(
            f"{len(no_lid)} cabled CA port(s) without a LID (not configured by the SM), in no pair: "
            + ", ".join(no_lid[:3])
            + (", …" if len(no_lid) > 3 else "")
        )
    if ix.lmc:
        warnings.append(
            f"LMC {ix.lmc}: only routes to base LIDs are checked (the path records name no others)"
            if path_sls is not None
            else f"LMC {ix.lmc}: {1 << ix.lmc} LIDs per CA port; the routes to each are checked (pairs counts them)"
        )
    if missing:
        warnings.append(f"{missing} pairs have no path record: SL {sl} assumed")
    cycle = find_cycle(st.edges, st.n_channels)
    a, b = np.divmod(st.edges, st.n_channels)
    examples = []
    for status in STATUSES:
        for e, d in st.examples.get(status, [])[:3]:
            w = walk_route(fabric, ix.ep[e], ix.ep[d], int(slm[e, d]))
            examples.append(LostRoute(ix.ep_desc(e), ix.ep_desc(d), status, w.detail))
    return VerifyReport(
        source=fabric.source,
        switches=ix.S,
        ca_ports=ix.E,
        pairs=st.pairs,
        delivered=st.delivered,
        sl_source=path_sls.source if path_sls else f"SL {sl} for every pair",
        lost=dict(st.lost),
        lost_examples=examples,
        hops={k: v for k, v in sorted(st.hops.items()) if v},
        stretch={k: v for k, v in sorted(st.stretch.items()) if v},
        sls_used=sorted(st.sls),
        vls_used=sorted(st.vls),
        channels=len(np.unique(np.concatenate([a, b]))),
        dependencies=len(st.edges),
        cdg_acyclic=cycle is None,
        cycle=[ix.channel_str(c) for c in cycle or []],
        cycle_routes=cycle_routes(ix, slm, cycle) if cycle else [],
        warnings=warnings,
        seconds=0.0,
    )


def verify_per_class(fabric: Fabric, plan: Plan) -> dict[str, VerifyReport]:
    """One report per class of `plan`, each with the class's first SL for every pair. dla
    routes every SL alike and a class's SLs share its VLs, so together these raise every
    channel dependency the plan can create (verify --plan, status and the dry run judge so)."""
    reports = verify_sls(fabric, [c.sls[0] for c in plan.classes])
    return {c.name: r for c, r in zip(plan.classes, reports, strict=True)}


def worst(reports: dict[str, VerifyReport]) -> VerifyReport:
    """The first report with a defect, else the first."""
    return next((r for r in reports.values() if not r.ok), next(iter(reports.values())))
