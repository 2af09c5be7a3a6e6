"""A sweep's points on every local core: each point is one whole simulation (its own core
instance, seeded by its own SimParams.seed), so the results do not depend on which process
runs a point or in which order; `jobs=1` runs them one after another in this process.

Processes, not threads: the C core is called through ctypes and nothing promises that it
releases the GIL for long. The workers are forked: they are this process's children and end
with the pool (a spawned pool also starts multiprocessing's resource tracker, which outlives
it), and they get the fabrics without a copy. A worker only simulates and returns its result
through the pool's pipe; it never writes to the console a progress thread of the parent may
hold. Each compiles a fabric's network once per link rate and keeps it for later points.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from ibqos import interrupt
from ibqos.errors import ExternalError
from ibqos.fabric.model import Fabric

from .network import Network, compile_network
from .params import SimParams
from .result import SimResult
from .run import simulate
from .traffic import TrafficSpec


@dataclass(frozen=True)
class Point:
    fabric: str  # key into the sweep's fabrics; also the source named in errors and notes
    traffic: TrafficSpec
    params: SimParams
    load: float


def default_jobs() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0))


class _Networks:
    """Compiled networks by (fabric key, link rate): compiling is per fabric, not per point."""

    def __init__(self, fabrics: dict[str, Fabric]):
        self.fabrics = fabrics
        self.nets: dict[tuple[str, float], Network] = {}

    def get(self, key: str, params: SimParams) -> Network:
        k = (key, params.rate_gbps)
        if k not in self.nets:
            self.nets[k] = compile_network(self.fabrics[key], rate_gbps=params.rate_gbps, source=key)
        return self.nets[k]

    def run(self, p: Point) -> SimResult:
        return simulate(self.get(p.fabric, p.params), p.traffic, p.params, p.load)


_WORKER: _Networks | None = None  # one per worker process, set by _init


def _init(fabrics: dict[str, Fabric]) -> None:
    global _WORKER
    interrupt.reset_in_child()
    _WORKER = _Networks(fabrics)


def _run(i: int, p: Point) -> tuple[int, SimResult]:
    assert _WORKER is not None, "worker started without _init"
    return i, _WORKER.run(p)


def run_points(
    fabrics: dict[str, Fabric],
    points: Sequence[Point],
    jobs: int | None = None,
    done: Callable[[int, SimResult], None] = lambda i, r: None,
) -> list[SimResult]:
    """Every point's result, in the order of `points`. `done(i, result)` is called in this
    process as each point finishes (in finishing order). The first failing point's error is
    raised after the points still running are cancelled."""
    jobs = min(jobs or default_jobs(), len(points))
    out: list[SimResult | None] = [None] * len(points)
    if jobs <= 1:
        nets = _Networks(fabrics)
        for i, p in enumerate(points):
            out[i] = r = nets.run(p)
            done(i, r)
        return [r for r in out if r is not None]
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init, initargs=(fabrics,)) as pool:
        # Highest loads first: they simulate the most packets, so the last point to start is a
        # short one and the cores finish together (results are still in the order of `points`).
        order = sorted(range(len(points)), key=lambda i: -points[i].load)
        pending = {pool.submit(_run, i, points[i]) for i in order}
        try:
            while pending:
                finished, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for f in finished:
                    i, res = f.result()  # raises the point's error
                    out[i] = res
                    done(i, res)
        except BrokenProcessPool as exc:  # a worker was killed (the OOM killer, a signal)
            raise ExternalError(f"a simulation worker died: {exc}; try fewer --jobs") from exc
        except BaseException:
            if isinstance(sys.exc_info()[1], KeyboardInterrupt):
                # a signal: stop the points running now rather than wait for them (the pool's
                # exit joins its workers); ProcessPoolExecutor has no public way before 3.14.
                # The futures are not cancelled first: the pool's manager thread fails them
                # itself when it finds the workers dead, and on 3.11 it raised
                # InvalidStateError (a traceback on stderr) for a future already cancelled.
                for proc in list(getattr(pool, "_processes", {}).values()):
                    proc.kill()
            else:
                for f in pending:
                    f.cancel()
            raise
    return [r for r in out if r is not None]
