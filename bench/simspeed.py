"""Simulator speed against a baseline built in the same run: the core at a reference commit
(BASELINE_REF) is built into a scratch directory, and both libraries simulate the same
read-back fabric, alternately, several times; the ratio of packet-hops per CPU second is
what speed is judged on (this machine is shared: absolute rates drift, same-run ratios much
less). Each pair of runs must also agree on every result but the host's timings: a faster
core computes the same simulation (identical)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ibqos.docfile import write_atomic
from ibqos.paths import REPO_ROOT
from ibqos_sim.harness import Harness
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly

# Main's core when issue 25 was filed (round one began on it; its core is a5cdbba's). It is
# run through its own binding (simspeed_baseline.py): 'ibqos-sim 5' put two arrays in the
# middle of struct ibs_results, so today's binding cannot read it.
BASELINE_REF = "5015b44"
# Issue 25's goal was set in absolute packet-hops per CPU second, against what the core at
# BASELINE_REF measured then: (the low end of that range, the goal). This machine's rate has
# drifted by 2-3x since (the same core, same run), so the goal is judged as the ratio it asked
# for, taken from the low end: the stricter reading.
GOAL = {72: (5.3e6, 7.0e6), 2550: (2.4e6, 5.0e6)}
# size: (load, warm-up µs, measured µs); 2550 at full load is issue 25's target
RUNS = {72: (1.0, 1000, 5000), 2550: (1.0, 200, 800)}
REPEATS = 3


@contextmanager
def baseline_tree(scratch: Path, ref: str = BASELINE_REF) -> Iterator[tuple[Path, Path]]:
    """The reference commit checked out and its core built: (its tree, its library)."""
    src = scratch / "src"
    subprocess.run(
        ["git", "-C", str(REPO_ROOT), "worktree", "add", "--detach", str(src), ref], check=True, capture_output=True
    )
    try:
        build = scratch / "build"
        subprocess.run(
            ["cmake", "-S", str(src), "-B", str(build), "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
            check=True,
            capture_output=True,
        )
        subprocess.run(
            ["cmake", "--build", str(build), "--target", "ibqos_sim", "-j", "2"], check=True, capture_output=True
        )
        lib = scratch / "libibqos_sim.baseline.so"
        write_atomic(lib, (build / "ci-sim" / "core" / "libibqos_sim.so").read_bytes())
        yield src, lib
    finally:
        subprocess.run(
            ["git", "-C", str(REPO_ROOT), "worktree", "remove", "--force", str(src)], capture_output=True, check=False
        )


def _measure(model: Path, baseline: tuple[Path, Path] | None, load: float, warm: float, meas: float) -> dict:
    env = dict(os.environ)
    if baseline is None:
        entry = ["-m", "ibqos_sim.sim.bench"]
    else:
        tree, lib = baseline
        env["IBQOS_SIM_LIB"] = str(lib)
        entry = [str(Path(__file__).with_name("simspeed_baseline.py")), str(tree)]
    cp = subprocess.run(
        [
            sys.executable,
            *entry,
            str(model),
            "--load",
            str(load),
            "--time-us",
            str(meas),
            "--warmup-us",
            str(warm),
        ],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=3600,
    )
    doc: dict = json.loads(cp.stdout.strip().splitlines()[-1])
    return doc


# what the host measured, not what the simulation computed
_HOST = ("wall_s", "cpu_s", "hops_per_cpu_s", "hops_per_wall_s", "peak_rss_mb")


def _computed(m: dict) -> dict:
    return {k: v for k, v in m.items() if k not in _HOST}


def bench_simspeed(log, sizes=tuple(RUNS)) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-simspeed-") as tmpdir:
        tmp = Path(tmpdir)
        log(f"simulator baseline: building the core at {BASELINE_REF}")
        with baseline_tree(tmp) as baseline:
            for size in sizes:
                rows.append(_compare(log, tmp, baseline, size))
    return rows


def _compare(log, tmp: Path, baseline: tuple[Path, Path], size: int) -> dict:
    load, warm, meas = RUNS[size]
    net = dragonfly(*DRAGONFLY_SIZES[size]).write_net(tmp / f"df{size}.net")
    with Harness(net, run_dir=tmp / f"run{size}") as h:
        h.run_sm(engine="dla,minhop", plugin=True, conf={"qos": "TRUE"}, log_flags=0x03, timeout=1800)
        fabric = h.read_back(save=False)
    model = tmp / f"df{size}.json"
    fabric.save(model)
    now, base, same = [], [], True
    for i in range(REPEATS):  # alternate, so drift hits both alike
        log(f"df{size}: simulator speed, run {i + 1}/{REPEATS}")
        mb = _measure(model, baseline, load, warm, meas)
        mn = _measure(model, None, load, warm, meas)
        same = same and _computed(mb) == _computed(mn)
        base.append(mb["hops_per_cpu_s"])
        now.append(mn["hops_per_cpu_s"])
    b, n = statistics.median(base), statistics.median(now)
    filed, goal = GOAL[size]
    return {
        "cas": size,
        "load": load,
        "sim_us": warm + meas,
        "baseline_Mhops_per_cpu_s": round(b / 1e6, 2),
        "now_Mhops_per_cpu_s": round(n / 1e6, 2),
        "now/baseline": round(n / b, 3),
        "goal_ratio": round(goal / filed, 3),
        "goal_met": n / b >= goal / filed,
        "identical": same,
    }
