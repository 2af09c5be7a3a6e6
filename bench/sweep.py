"""A load sweep on one core against the same sweep on two, in the same run: `ibqos simulate
--sweep` on the dla-routed 72-CA dragonfly (real OpenSM, read back), run as the command an
admin types with --jobs 1 and --jobs 2, alternately, REPEATS times each. The issue asks for
--jobs 2 in at most 0.6x the wall time of --jobs 1 on 2 cores, with identical results: every
number in sim.json but the host's timings of each point (counters wall_s, cpu_s,
hops_per_cpu_s) is compared. The machine is shared by other work: the load average before
each run is kept beside its time, and the ratio is given of the medians and of the best run
of each (the one the other work disturbed least, as timeit reports); the verdict is on the
best runs. The kernel here shares CPU time between sessions (sched_autogroup), not between
processes: while other sessions keep both cores busy, the two workers of --jobs 2 share
one session's part and are no faster than one, so only a run on a machine the other work
leaves room on says what the cores give."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ibqos_sim.harness import Harness
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly
from ibqos_sim.sim.result import without_timing

SIZE = 72
SWEEP = "0.1:1.0:0.1"  # 10 points
WARMUP_US, TIME_US = 1000, 30000
REPEATS = 3
IBQOS = str(Path(sys.executable).parent / "ibqos")


def _sweep(model: Path, jobs: int, out: Path) -> tuple[float, dict]:
    cmd = [IBQOS, "simulate", str(model), "--sweep", SWEEP, "--warmup-us", str(WARMUP_US)]
    cmd += ["--time-us", str(TIME_US), "--jobs", str(jobs), "--out", str(out), "--json"]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, timeout=3600, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    doc = json.loads((out / "uniform-sweep.json").read_text())
    doc["results"] = [without_timing(r) for r in doc["results"]]
    return wall, doc


def bench_sweep(log) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmpdir:
        tmp = Path(tmpdir)
        net = dragonfly(*DRAGONFLY_SIZES[SIZE]).write_net(tmp / f"df{SIZE}.net")
        with Harness(net, run_dir=tmp / "fabric") as h:
            h.run_sm(engine="dla,minhop", plugin=True, conf={"qos": "TRUE"}, log_flags=0x03, timeout=600)
            fabric = h.read_back(save=False)
        model = tmp / f"df{SIZE}.json"
        fabric.save(model)
        walls: dict[int, list[float]] = {1: [], 2: []}
        loads: dict[int, list[float]] = {1: [], 2: []}
        docs: dict[int, list[dict]] = {1: [], 2: []}
        for i in range(REPEATS):  # alternate, so drift in the machine's load hits both alike
            for jobs in (1, 2):
                log(f"sweep: --jobs {jobs}, run {i + 1}/{REPEATS}")
                loads[jobs].append(os.getloadavg()[0])
                wall, doc = _sweep(model, jobs, tmp / f"j{jobs}-{i}")
                walls[jobs].append(wall)
                docs[jobs].append(doc)
        identical = all(d == docs[1][0] for d in docs[1] + docs[2])
        one, two = min(walls[1]), min(walls[2])
        row = {
            "cas": SIZE,
            "points": len(docs[1][0]["results"]),
            "sim_us_per_point": WARMUP_US + TIME_US,
            "cores": len(os.sched_getaffinity(0)),
            "jobs1_s": [round(w, 2) for w in walls[1]],
            "jobs2_s": [round(w, 2) for w in walls[2]],
            "loadavg_before_jobs1": [round(x, 2) for x in loads[1]],
            "loadavg_before_jobs2": [round(x, 2) for x in loads[2]],
            "jobs2/jobs1_median": round(statistics.median(walls[2]) / statistics.median(walls[1]), 3),
            "jobs2/jobs1_best": round(two / one, 3),
            "at_most_0.6": two <= 0.6 * one,
            "identical_results": identical,
        }
    return [row]
