"""Options the simulating commands share (simulate, compare-engines, paper): comma-separated
lists, the switch model, where a sweep's points run."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click
from ibqos.errors import InputError
from ibqos_sim.slurm.sbatch import SlurmOptions

T = TypeVar("T")


def csv_list(text: str, what: str, parse: Callable[[str], T]) -> tuple[T, ...]:
    try:
        return tuple(parse(x.strip()) for x in text.split(",") if x.strip())
    except ValueError as exc:
        raise InputError(f"{text!r} is not a comma-separated list", field=what) from exc


def loads(text: str, what: str = "--loads") -> tuple[float, ...]:
    vals = csv_list(text, what, float)
    if not vals or any(not 0 < v <= 1 for v in vals):
        raise InputError("loads are fractions of the link in (0, 1]", field=what)
    return vals


def switch_model_options(f):
    """The switch model's choices that change results (docs/simulator.md, "Switch model")."""
    opts = [
        click.option("--voq/--no-voq", default=True, show_default=True, help="Virtual output queues."),
        click.option(
            "--input-reads",
            type=click.Choice(["N", "1"]),
            default="N",
            show_default=True,
            help="Packets a switch input feeds at once: N (one per queue) or 1 (read at link rate).",
            callback=lambda ctx, param, value: 1 if value == "1" else value,  # SimParams.input_reads: "N" | 1
        ),
        click.option(
            "--voq-buffers",
            type=click.Choice(["shared", "per-output"]),
            default="shared",
            show_default=True,
            help="With VOQ: the queues of an input VL share its buffer and credits (IB), or each has "
            "--buffer-packets of its own with route-aware credits.",
        ),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def sweep_options(f):
    """Where a sweep's points run: --jobs on this host, or --slurm and sbatch's options."""
    opts = [
        click.option(
            "--jobs", type=click.IntRange(1), default=None, help="Points simulated at once [default: every core]."
        ),
        click.option("--slurm", is_flag=True, help="Run the points as one Slurm job array (sbatch --array)."),
        click.option("--slurm-partition", help="sbatch --partition."),
        click.option("--slurm-time", help="sbatch --time, per point (e.g. 30, 1:00:00)."),
        click.option("--slurm-account", help="sbatch --account."),
        click.option("--slurm-opt", multiple=True, help="More sbatch options, as you would type them (repeatable)."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def slurm_choice(jobs, slurm, partition, time_limit, account, opts, wait: bool = True):
    """The SlurmOptions for --slurm, else None; refuses options that do not go together."""
    if slurm and jobs is not None:
        raise InputError("--jobs is for local runs; Slurm places an array's tasks itself", field="--jobs")
    chosen = SlurmOptions.parse(partition, time_limit, account, opts)
    if not slurm and (chosen.args() or not wait):
        raise InputError("the Slurm options need --slurm", field="--slurm")
    return chosen if slurm else None
