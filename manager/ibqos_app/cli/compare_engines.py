"""`ibqos compare-engines NET|dfN [--engines …] [--patterns …] [--loads …]`."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click
from ibqos.docfile import made_dir, write_json
from ibqos.errors import InputError
from ibqos.extras import require_plot
from ibqos.outpath import OUT_DIR
from ibqos.term import console, literal, print_table
from ibqos_sim import compare_engines as ce
from ibqos_sim import sweeprun
from ibqos_sim.harness.netfile import check_net
from ibqos_sim.harness.topology import from_spec
from ibqos_sim.sim import SimParams
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from . import _sim_args as cli_args
from ._numbers import FiniteFloat


def _fabric(spec: str):
    """(net file, None) for an existing ibsim net file, else (None, topology) for dfN & co."""
    path = Path(spec)
    if path.exists():
        check_net(path)
        return path, None
    if "/" in spec or spec.endswith(".net"):
        raise InputError("no such ibsim net file", file=spec)
    try:
        return None, from_spec(spec)
    except InputError as e:
        raise InputError(f"{e.detail}; or an ibsim net file", field="FABRIC") from e


@click.command("compare-engines")
@click.argument("fabric")
@click.option("--engines", default="dla,lash,dfsssp,updn,minhop", show_default=True)
@click.option(
    "--patterns",
    default="uniform,stencil,hotspot",
    show_default=True,
    help="uniform, stencil (3D, 6-point), hotspot, adversarial (dragonflies: every CA to the next group)",
)
@click.option("--loads", default="0.2,0.4,0.6,0.8,1.0", show_default=True)
@click.option("--time-us", type=FiniteFloat(10, 100_000), default=300.0, show_default=True)
@click.option("--warmup-us", type=FiniteFloat(0, 100_000), default=50.0, show_default=True)
@click.option("--buffer-packets", type=click.IntRange(1, 1024), default=16, show_default=True)
@cli_args.switch_model_options
@click.option("--seed", type=click.IntRange(0), default=1, show_default=True)
@click.option(
    "--out",
    "out_dir",
    type=OUT_DIR,
    default=Path("runs/compare-engines"),
    show_default=True,
)
@cli_args.sweep_options
def compare_engines(
    fabric,
    engines,
    patterns,
    loads,
    time_us,
    warmup_us,
    buffer_packets,
    voq,
    voq_buffers,
    input_reads,
    seed,
    out_dir,
    jobs,
    slurm,
    slurm_partition,
    slurm_time,
    slurm_account,
    slurm_opt,
):
    """Route FABRIC (an ibsim net file, or dfN) with each engine on real OpenSM, read it back
    (with the SA's per-pair SLs for lash and dfsssp) and simulate seed 003's traffic patterns:
    throughput against load per engine, with the SLs and VLs each one used (Table 2).

    Writes OUT/compare.json, OUT/compare.png and each routed engine's read-back model as
    OUT/ENGINE/fabric.json. An engine OpenSM replaces by another is reported as not run, a
    run that deadlocks as DEADLOCK."""
    require_plot("compare-engines (compare.png)")
    engine_list = ce.parse_engines(engines)
    pattern_list = ce.parse_patterns(patterns)
    load_list = list(cli_args.loads(loads))
    slurm_opts = cli_args.slurm_choice(jobs, slurm, slurm_partition, slurm_time, slurm_account, slurm_opt)
    params = SimParams(
        rate="QDR",
        mtu=4096,
        buffer_packets=buffer_packets,
        voq=voq,
        voq_buffers=voq_buffers,
        input_reads=input_reads,
        seed=seed,
        warmup_us=warmup_us,
        time_us=time_us,
    )
    net_path, topo = _fabric(fabric)
    with made_dir(out_dir):  # no empty directory left when the run fails
        err = Console(stderr=True)
        with tempfile.TemporaryDirectory(prefix="ibqos-compare-") as tmp:
            if topo is not None:
                net_path = topo.write_net(Path(tmp) / "fabric.net")
            with Progress(console=err, transient=True) as prog:
                task = prog.add_task("simulating", total=len(engine_list) * len(pattern_list) * len(load_list))
                results = ce.compare(
                    net_path,
                    engine_list,
                    pattern_list,
                    load_list,
                    params,
                    tick=lambda: prog.advance(task),
                    run_dir=Path(tmp) / "run",
                    save_dir=out_dir,
                    run=sweeprun.runner(jobs, slurm_opts, out_dir / "compare.slurm", err),
                )
        write_json(
            out_dir / "compare.json",
            {
                "schema": "ibqos.compare-engines/2",
                "fabric": fabric,
                "loads": load_list,
                "patterns": pattern_list,
                "params": params.model_dump(),
                "engines": [r.to_json() for r in results],
            },
        )
        ce.plot(results, pattern_list, out_dir / "compare.png")
    out = console(pipe_width=None)
    t = Table(
        title=literal(f"{fabric}, {buffer_packets}-packet buffers per VL: what each engine used (seed 003 Table 2)")
    )
    for col in ["engine", "routed by", "SLs", "VLs", "deadlock", "where / why"]:
        t.add_column(col, overflow="fold")
    for row in ce.resource_rows(results):
        style = "red" if row[4].startswith(("DEADLOCK", "CREDIT")) else ("yellow" if row[4] == "not run" else None)
        t.add_row(*map(literal, row), style=style)
    print_table(out, t)
    for pattern in pattern_list:
        t = Table(title=literal(f"{pattern}: accepted traffic (% of the link) by offered load"))
        t.add_column("engine")
        for load in load_list:
            t.add_column(f"{load:g}", justify="right")
        for row in ce.throughput_rows(results, pattern):
            t.add_row(*[literal((c, "red")) if c in ("DEADLOCK", "STALLED") else literal(c) for c in row])
        print_table(out, t)
    click.echo(f"wrote {out_dir / 'compare.json'}, {out_dir / 'compare.png'} and each engine's fabric.json")
