"""Where `ibqos simulate`'s points run (every local core, or a Slurm job array) and the one
way their results become sim.json, tables and plots, whichever ran them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from ibqos.docfile import validate
from ibqos.errors import ExternalError, InputError, VerificationFailed
from ibqos.fabric.model import Fabric
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .sim import plot as plots
from .sim import report
from .sim.points import Point, default_jobs, run_points
from .sim.result import SimResult
from .slurm import jobdir, sbatch


def progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


def run_local(fabrics: dict[str, Fabric], points: list[Point], jobs: int | None, console: Console) -> list[SimResult]:
    jobs = jobs or default_jobs()
    what = "simulating" if len(points) == 1 else f"simulating on {min(jobs, len(points))} core(s)"
    with progress(console) as prog:
        task = prog.add_task(what, total=len(points))
        return run_points(fabrics, points, jobs, done=lambda i, r: prog.advance(task))


def submit(
    fabrics: dict[str, Fabric],
    points: list[Point],
    root: Path,
    merge: dict,
    opts: sbatch.SlurmOptions,
    console: Console,
) -> str:
    jobdir.write(root, fabrics, points, merge)
    job = sbatch.submit(root, len(points), opts)
    console.print(
        f"submitted job array {job}: {len(points)} points, in {root}", markup=False, highlight=False, soft_wrap=True
    )
    return job


def run_slurm(
    fabrics: dict[str, Fabric],
    points: list[Point],
    merge: dict,
    opts: sbatch.SlurmOptions,
    wait: bool,
    console: Console,
) -> list[SimResult] | None:
    """Submit the points as one array; with `wait`, their results once every task has ended."""
    out_dir = Path(merge["out_dir"]).resolve()  # --collect may run from another directory
    root = out_dir / f"{merge['name']}.slurm"
    job = submit(fabrics, points, root, {**merge, "out_dir": str(out_dir)}, opts, console)
    if not wait:
        console.print(
            f"merge them when it is done: ibqos simulate --collect {root}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        return None
    try:
        with progress(console) as prog:
            task = prog.add_task(f"Slurm job {job}", total=len(points))
            sbatch.wait(root, job, len(points), tick=lambda k: prog.update(task, completed=k))
    except KeyboardInterrupt:
        console.print(
            f"job {job} keeps running (scancel {job} stops it); merge it later: ibqos simulate --collect {root}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        raise
    return merged(root, len(points))


PointsRunner = Callable[[dict[str, Fabric], list[Point], Callable[[], None]], list[SimResult]]


def runner(jobs: int | None, slurm: sbatch.SlurmOptions | None, root: Path, console: Console) -> PointsRunner:
    """How compare-engines and paper run their points, tick() once per finished point: on
    `jobs` local cores, or (with `slurm`) as one job array from root, waited for and merged."""
    if slurm is None:
        return lambda fabrics, points, tick: run_points(fabrics, points, jobs, done=lambda i, r: tick())

    def on_slurm(fabrics: dict[str, Fabric], points: list[Point], tick: Callable[[], None]) -> list[SimResult]:
        if not points:
            return []
        job = submit(fabrics, points, root.resolve(), {}, slurm, console)
        seen = [0]

        def advance(k: int) -> None:
            for _ in range(k - seen[0]):
                tick()
            seen[0] = max(seen[0], k)

        sbatch.wait(root.resolve(), job, len(points), advance)
        return merged(root.resolve(), len(points))

    return on_slurm


def merged(root: Path, n: int) -> list[SimResult]:
    job = jobdir.job_id(root)
    if len(jobdir.finished(root, n)) < n:
        still = sbatch.queued(job) if job else []
        if still:
            raise ExternalError(
                f"job {job} is still running ({len(jobdir.finished(root, n))} of {n} points done): collect it later"
            )
        raise ExternalError(f"job {job}: {sbatch.missing_report(root, job, n)}")
    return jobdir.results(root, n)


def collect(root: Path) -> tuple[list[SimResult], dict]:
    """A --no-wait sweep's results and how to merge them."""
    if not root.is_dir():
        raise InputError("not a directory" if root.exists() else "no such directory", file=root)
    _, points, merge = jobdir.read(root)
    if not isinstance(merge, dict) or "name" not in merge:  # compare-engines and paper merge as they wait
        raise InputError("not an `ibqos simulate` sweep: its command merged it when it ended", file=root)
    # a sweep.json edited by hand: its merge names the files written, checked as every document is
    checked = validate(_Collect, {"merge": merge}, root / "sweep.json").merge
    return merged(root, len(points)), checked.model_dump()


class _Merge(BaseModel):
    """How `ibqos simulate` finishes a sweep (sweep.json's merge): sim.json's directory, its
    name (a file name), what it records, and the plots."""

    model_config = ConfigDict(extra="allow")
    out_dir: StrictStr = Field(min_length=1)
    name: StrictStr = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    meta: dict[str, Any]
    plot: StrictBool
    title: StrictStr = ""


class _Collect(BaseModel):
    merge: _Merge


def finish(results: list[SimResult], merge: dict, console: Console, as_json: bool) -> None:
    """sim.json, the tables (or the JSON), the plots; exit 1 on a deadlocked point."""
    out_dir, name, meta = Path(merge["out_dir"]), merge["name"], merge["meta"]
    path = report.write_json(out_dir / f"{name}.json", results, meta)
    if as_json:
        click.echo(json.dumps({"schema": report.SCHEMA, **meta, "results": [r.to_json() for r in results]}, indent=1))
    else:
        for r in results if len(results) == 1 else []:
            report.print_result(r, console)
        if len(results) > 1:
            report.print_sweep(results, console)
        console.print(f"results: {path}", markup=False, highlight=False)
    if merge["plot"]:
        pngs = [plots.latency_per_sl(results, out_dir / f"{name}-latency.png")]
        if len(results) > 1:
            pngs.insert(0, plots.load_throughput(results, out_dir / f"{name}-throughput.png", title=merge["title"]))
        if not as_json:
            console.print("plots: " + ", ".join(str(p) for p in pngs))
    bad = [r for r in results if r.deadlock]
    if bad and (d := bad[0].deadlock):
        raise VerificationFailed(
            f"{bad[0].status} at load {bad[0].load:.2f}, {d['at_us']:.1f} us: "
            + " -> ".join(d["cycle"] + d["cycle"][:1])
        )
