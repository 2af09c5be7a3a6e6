"""A Slurm sweep's directory, on a filesystem every node of the cluster reads (the one
assumption a Slurm sweep makes, docs/simulator.md):

  sweep.json         the points (fabric key, traffic, params, load) and how to merge them
  fabrics/K.json     each fabric the points run on, exactly as the local run simulates it
  job.sh             the array task's script: this Python, `-m ibqos_sim.slurm.task`
  job.json           the array's Slurm job ID, once submitted
  results/NNNN.json  point NNNN's result, written by its task (atomically: whole or absent)
  logs/             each task's stdout and stderr (Slurm's %A_%a)
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from ibqos.docfile import made_dir, read_json, write_atomic
from ibqos.errors import InputError
from ibqos.fabric.model import Fabric
from pydantic import ValidationError

from ..sim.params import SimParams
from ..sim.points import Point
from ..sim.result import SimResult
from ..sim.traffic import TrafficSpec

SCHEMA = "ibqos.sweep/1"


def write(jobdir: Path, fabrics: dict[str, Fabric], points: list[Point], merge: dict) -> None:
    """Everything the array's tasks read; `merge` is what --collect needs to finish the sweep."""
    # a sweep that cannot be written leaves no empty job directory behind (made_dir)
    with made_dir(jobdir), made_dir(jobdir / "fabrics"), made_dir(jobdir / "results"), made_dir(jobdir / "logs"):
        for stale in (jobdir / "results").glob("*.json"):  # a previous sweep's points are not ours
            stale.unlink()
        files = {}
        for k, (key, fabric) in enumerate(fabrics.items()):
            files[key] = f"fabrics/{k}.json"
            fabric.save(jobdir / files[key])
        doc = {
            "schema": SCHEMA,
            "fabrics": files,
            "points": [
                {"fabric": p.fabric, "traffic": p.traffic.model_dump(), "params": p.params.model_dump(), "load": p.load}
                for p in points
            ],
            "merge": merge,
        }
        write_atomic(jobdir / "sweep.json", json.dumps(doc, indent=1) + "\n")
        script = jobdir / "job.sh"
        write_atomic(
            script,
            "#!/bin/sh\n# one point of an ibqos sweep per array task (ibqos_sim/slurm/jobdir.py)\n"
            f"exec {shlex.quote(sys.executable)} -m ibqos_sim.slurm.task {shlex.quote(str(jobdir))}"
            ' "$SLURM_ARRAY_TASK_ID"\n',
        )
        script.chmod(0o755)


def read(jobdir: Path) -> tuple[dict[str, Path], list[Point], dict]:
    """(fabric files by key, points, merge) from jobdir/sweep.json."""
    path = jobdir / "sweep.json"
    if not path.exists():
        raise InputError("no sweep here (no sweep.json): give the directory a --slurm sweep wrote", file=path)
    doc = read_json(path)
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise InputError(f"not an ibqos sweep (want schema {SCHEMA!r})", file=path, field="schema")
    try:
        points = [
            Point(d["fabric"], TrafficSpec(**d["traffic"]), SimParams(**d["params"]), d["load"]) for d in doc["points"]
        ]
        return {k: jobdir / f for k, f in doc["fabrics"].items()}, points, doc["merge"]
    except (KeyError, TypeError, AttributeError, ValidationError) as e:
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InputError(f"not a sweep this ibqos wrote ({why})", file=path) from e


def result_path(jobdir: Path, i: int) -> Path:
    return jobdir / "results" / f"{i:04d}.json"


def write_result(jobdir: Path, i: int, res: SimResult) -> None:
    write_atomic(result_path(jobdir, i), json.dumps(res.to_json()) + "\n")


def finished(jobdir: Path, n: int) -> list[int]:
    """Indices of the points whose result is written."""
    return [i for i in range(n) if result_path(jobdir, i).exists()]


def results(jobdir: Path, n: int) -> list[SimResult]:
    return [_result(result_path(jobdir, i)) for i in range(n)]


def _result(path: Path) -> SimResult:
    """A point's result, as its task wrote it; anything else (edited, {}, another program's)
    is one line naming the file."""
    doc = read_json(path)
    try:
        return SimResult.from_json(doc)
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise InputError(f"not a simulation result this ibqos wrote ({type(e).__name__}: {why})", file=path) from e


def save_job_id(jobdir: Path, job_id: str) -> None:
    write_atomic(jobdir / "job.json", json.dumps({"job_id": job_id}) + "\n")


def job_id(jobdir: Path) -> str | None:
    try:
        doc = read_json(jobdir / "job.json")  # a FIFO or a device refused, as every input is
    except InputError:  # not submitted yet, or not readable: no ID to name
        return None
    return str(doc["job_id"]) if isinstance(doc, dict) and "job_id" in doc else None


def task_log(jobdir: Path, job: str | None, i: int) -> Path:
    return jobdir / "logs" / f"{job or '*'}_{i}.out"
