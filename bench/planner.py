"""Policy → plan → exact analysis of every role, timed per policy (goal: < 1 s for 8 classes).
The in-run baseline is seed 002's Algorithm 1 at its default 30 runs on the same terminal
tables, the analysis an admin would otherwise run by hand."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ibqos.arbiter.algorithm1 import analyze_algorithm1
from ibqos.paths import REPO_ROOT
from ibqos.planner import plan_and_analyze

POLICIES = [
    REPO_ROOT / "examples" / "two-class.yaml",
    REPO_ROOT / "examples" / "four-class.yaml",
    REPO_ROOT / "examples" / "seed002-config-a.yaml",
    Path(__file__).resolve().parent / "policies" / "eight-class.yaml",
]


T = TypeVar("T")


def _best_of(fn: Callable[[], T], n: int = 5) -> tuple[float, float, T]:
    times, outs = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        outs.append(fn())
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times), outs[-1]


def bench_planner(log) -> list[dict]:
    rows = []
    for policy in POLICIES:
        log(f"plan {policy.name}")
        best, med, plan = _best_of(lambda: plan_and_analyze(policy))
        t = plan.vlarb.role("terminal")
        a1_best, _, _ = _best_of(
            lambda: analyze_algorithm1(t, packet_bytes=plan.fabric.mtu, mode=plan.accounting, runs=30)
        )
        rows.append(
            {
                "policy": policy.name,
                "classes": len(plan.classes),
                "plan_s_best": round(best, 4),
                "plan_s_median": round(med, 4),
                "algorithm1_30runs_s": round(a1_best, 4),
                "plan/algorithm1": round(best / a1_best, 2) if a1_best else None,
                "under_1s": med < 1.0,
            }
        )
    return rows
