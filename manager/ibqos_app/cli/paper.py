"""`ibqos paper seed003-5.1 [--out DIR] [--engines …] [--quick]`: seed 003 §5.1 reproduced."""

from __future__ import annotations

from pathlib import Path

import click
from ibqos.docfile import made_dir
from ibqos.errors import InputError
from ibqos.outpath import OUT_DIR
from ibqos_sim import sweeprun
from ibqos_sim.paper import seed003
from rich.console import Console
from rich.progress import Progress

from . import _sim_args as cli_args
from ._numbers import FiniteFloat
from ._sim_args import csv_list

EXPERIMENTS = ("seed003-5.1",)


@click.command()
@click.argument("experiment", type=click.Choice(EXPERIMENTS))
@click.option(
    "--out",
    "out_dir",
    type=OUT_DIR,
    default=Path("runs/paper-seed003"),
    show_default=True,
)
@click.option("--engines", default="dla,minhop,updn,lash,dfsssp", show_default=True)
@click.option("--buffers", default="1,2,4,8,16,32", show_default=True, help="Packets per VL.")
@click.option(
    "--input-reads",
    "reads",
    default="N,1",
    show_default=True,
    help="Switch models to run (docs/simulator.md): N, 1, or both.",
)
@click.option(
    "--voq-buffers",
    "voq_buffers",
    default="shared,per-output",
    show_default=True,
    help="VOQ buffer models to run (docs/simulator.md): shared, per-output, or both.",
)
@click.option("--time-us", type=FiniteFloat(10, 100_000), default=5000.0, show_default=True)
@click.option("--warmup-us", type=FiniteFloat(0, 100_000), default=1000.0, show_default=True)
@click.option("--quick", is_flag=True, help="Loads 0.5 and 1.0 only, 200 µs: a smoke run.")
@cli_args.sweep_options
def paper(
    experiment,
    out_dir,
    engines,
    buffers,
    reads,
    voq_buffers,
    time_us,
    warmup_us,
    quick,
    jobs,
    slurm,
    slurm_partition,
    slurm_time,
    slurm_account,
    slurm_opt,
):
    """Reproduce a seed paper's experiment: figures (PNG), Table 1 (markdown, the paper's
    values beside ours) and results.json in --out."""
    seed003.require_matplotlib()
    slurm_opts = cli_args.slurm_choice(jobs, slurm, slurm_partition, slurm_time, slurm_account, slurm_opt)
    reads_t = tuple(1 if r == "1" else "N" for r in csv_list(reads, "--input-reads", str))
    if not reads_t or any(r not in ("N", 1) for r in reads_t):
        raise InputError("give N, 1 or N,1", field="--input-reads")
    vb_t = tuple(csv_list(voq_buffers, "--voq-buffers", str))
    if not vb_t or any(v not in ("shared", "per-output") for v in vb_t) or len(set(vb_t)) != len(vb_t):
        raise InputError("give shared, per-output or shared,per-output", field="--voq-buffers")
    setup = seed003.Setup(
        engines=csv_list(engines, "--engines", str),
        buffers=csv_list(buffers, "--buffers", int),
        input_reads=reads_t,
        voq_buffers=vb_t,
        warmup_us=warmup_us,
        time_us=time_us,
    )
    if quick:
        setup.loads, setup.time_us, setup.warmup_us = (0.5, 1.0), 200.0, 50.0
    if not setup.buffers or min(setup.buffers) < 1:
        raise InputError("buffers are positive packet counts", field="--buffers")
    err = Console(stderr=True)
    total = len(setup.engines) * seed003.runs_per_engine(setup)
    with made_dir(out_dir):  # no empty directory left when the run fails
        with Progress(console=err, transient=True) as prog:
            task = prog.add_task("simulating", total=total)
            runs = seed003.run_experiment(
                setup,
                tick=lambda: prog.advance(task),
                note=lambda s: err.print(s, markup=False, highlight=False),
                run=sweeprun.runner(jobs, slurm_opts, out_dir / "paper.slurm", err),
            )
        files = seed003.write_outputs(runs, setup, out_dir)
    for line in seed003.check_deadlocks(runs, setup):
        err.print(line, markup=False, highlight=False)
    click.echo(files["table"].read_text())
    click.echo("wrote " + ", ".join(str(p) for p in files.values()))
