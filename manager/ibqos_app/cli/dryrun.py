"""`ibqos dryrun POLICY|PLAN.json [--topology SPEC | --net FILE] [--traffic P] [--out DIR]`."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import click
from ibqos.docfile import error_message
from ibqos.errors import InputError, VerificationFailed
from ibqos.extras import require_plot
from ibqos.outpath import OUT_DIR
from ibqos.render import check_osm_dir
from ibqos.term import console, literal, print_table
from ibqos_sim.sim.params import SimParams
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Column, Table

from ..dryrun import STAGES, DryRun, DryRunConfig
from ..dryrun.judge import LATENCY_RULE, bandwidth_rule
from ..dryrun.verdict import passed, summary

if TYPE_CHECKING:
    from ibqos_sim.sim.traffic import Pattern


@click.command()
@click.argument("policy", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--topology",
    default=None,
    help="Generated fabric: dfN (42/72/342/1056/2550), dragonfly:a=4,p=2,h=2[,g=..] (default df72).",
)
@click.option("--net", type=click.Path(dir_okay=False, path_type=Path), help="An ibsim net file instead.")
@click.option(
    "--traffic",
    default="uniform",
    show_default=True,
    type=click.Choice(["uniform", "hotspot", "stencil", "adversarial"]),
    help="Pattern of every class's saturating flows in the simulation.",
)
@click.option(
    "--out",
    type=OUT_DIR,
    default=Path("ibqos-dryrun"),
    show_default=True,
    help="Run directory: plan, config, fabric, reports.",
)
@click.option("--sim-time", "sim_time_us", default=200.0, show_default=True, help="Simulated µs after warm-up.")
@click.option("--seed", default=1, show_default=True)
@click.option(
    "--fault",
    "faults",
    multiple=True,
    metavar="LINK|SWITCH",
    help="Take this down after OpenSM routed the healthy fabric, then route and judge "
    "again: link:NODE[PORT] or switch:NODE, NODE a name (sw-g0-s0) or a node GUID. "
    "Repeat for several.",
)
@click.option(
    "--lmc",
    type=click.IntRange(0, 7),
    default=0,
    show_default=True,
    help="The LMC your OpenSM runs with (opensm.conf `lmc`, for multipathing): dla routes one "
    "LID per port and refuses LMC > 0, which the run then reports.",
)
@click.option(
    "--ibsim",
    type=click.Choice(["auto", "patched", "debian"]),
    default=None,
    help="Which ibsim: the patched one from `make build` (64/64 VLArb, VLHighLimit), Debian's "
    "(8/8, no VLHighLimit), or auto: patched when built [default: IBQOS_IBSIM, else auto].",
)
@click.option(
    "--fit-to-fabric",
    is_flag=True,
    help="When the fabric's ports hold fewer VLArb entries than the policy's fabric.vlarb_cap, "
    "judge a plan fitted to them (the report says so) instead of refusing the run.",
)
def dryrun(
    policy: Path,
    topology: str | None,
    net: Path | None,
    traffic: Pattern,  # a click.Choice of them
    out: Path,
    sim_time_us: float,
    seed: int,
    faults: tuple[str, ...],
    lmc: int,
    ibsim: str | None,
    fit_to_fabric: bool,
) -> None:
    """Policy to verdict on an ibsim fabric, with real OpenSM and the dla plugin.

    POLICY is a policy (YAML), planned here, or a plan from `ibqos plan` (a .json file), judged
    as it is: checked, never planned again.

    Exit 0 only when every SLA passes and the fabric is verified deadlock-free; a defect is
    VerificationFailed (exit 1, mapped in ibqos_app.cli)."""

    if topology and net:
        raise InputError("give --topology or --net, not both", field="dryrun")
    try:  # the simulator's own rule for its window, before the fabric starts
        SimParams(time_us=sim_time_us)
    except ValidationError as e:
        raise InputError(f"{sim_time_us:g}: {error_message(e.errors()[0])}", field="--sim-time") from e
    require_plot("the dry run's report.html")
    check_osm_dir(out.absolute())  # before the fabric starts: the run renders into it
    cfg = DryRunConfig(
        policy=policy,
        out=out.absolute(),
        topology=topology or (None if net else "df72"),
        net=net,
        traffic=traffic,
        sim_time_us=sim_time_us,
        seed=seed,
        faults=faults,
        ibsim=ibsim,
        fit_to_fabric=fit_to_fabric,
        lmc=lmc,
    )
    con = Console(stderr=True)
    if not con.is_terminal:
        # a pipe or a log file: rich draws its bars only at the end there, so one line per
        # stage as it finishes, for whoever tails the log
        dr = DryRun(cfg, lambda stage, frac: _stage_line(dr, stage, frac))
        dr.run()
        _print_verdict(dr)
        _raise_on_defect(dr)
        return
    # at 80 columns the note wraps and the elapsed time stays whole (rich cut it to `0:0…`)
    with Progress(
        TextColumn("[bold]{task.description:<10}"),
        BarColumn(bar_width=20),
        TextColumn("{task.fields[note]}", table_column=Column(overflow="fold", ratio=1)),
        TimeElapsedColumn(table_column=Column(min_width=7, no_wrap=True)),
        console=con,
        transient=False,
    ) as bar:
        tasks = {name: bar.add_task(name, total=1.0, note="", start=False) for name in STAGES}

        def progress(stage: str, frac: float) -> None:
            t = tasks[stage]
            if frac == 0.0:
                bar.start_task(t)
            bar.update(t, completed=frac)

        def failed(stage: str, error: BaseException) -> None:
            bar.update(tasks[stage], note="[red]failed[/red]")

        dr = DryRun(cfg, progress, failed)
        try:
            dr.run()
        finally:
            for st in dr.s.stages:
                bar.update(tasks[st.name], note=textwrap.shorten(st.note, 60, placeholder=" [...]"))
    _print_verdict(dr)
    _raise_on_defect(dr)


def _raise_on_defect(dr) -> None:
    if not passed(dr.s):
        raise VerificationFailed(f"dry run failed: {summary(dr.s)}")


def _stage_line(dr, stage: str, frac: float) -> None:
    if frac == 1.0 and dr.s.stages and dr.s.stages[-1].name == stage:
        st = dr.s.stages[-1]
        click.echo(f"{stage}: {st.note} ({st.seconds:.1f} s)", err=True)


def _e2e_cell(v) -> str:
    """'12.34' or '12.34 ≤ 20' with the policy's max_e2e_latency_us."""
    if v.e2e_bound_us is None:
        return "–"
    return f"{v.e2e_bound_us:.2f}" + ("" if v.e2e_max_us is None else f" ≤ {v.e2e_max_us:g}")


def _print_verdict(dr) -> None:
    con = console(pipe_width=140)
    faults = ", ".join(f.spec.text for f in dr.s.faults)
    # file and node names are the admin's text, never rich markup
    t = Table(
        title=literal(f"SLA verdict: {dr.cfg.policy} on {dr.s.topology_name}" + (f" with {faults}" if faults else ""))
    )
    t.caption = literal(
        bandwidth_rule(dr.s.plan.share_tolerance_pp) + ". " + LATENCY_RULE[0].upper() + LATENCY_RULE[1:] + "."
    )
    for col in (
        "class",
        "prio",
        "SLs",
        "asked",
        "plan %",
        "sim %",
        "wait µs (analysis)",
        "bound µs",
        "e2e bound µs",
        "p99 µs 5 %",
        "p99 µs (info)",
        "result",
    ):
        t.add_column(col, justify="right" if col not in ("class", "prio") else "left")
    for v in dr.s.verdicts:
        t.add_row(
            v.name,
            v.priority,
            ",".join(map(str, v.sls)),
            v.requested,
            f"{v.planned_share:.2f}",
            "–" if v.simulated_share is None else f"{v.simulated_share:.2f}",
            f"{v.worst_wait_us:.3f}",
            "–" if v.latency_bound_us is None else f"{v.latency_bound_us:g}",
            _e2e_cell(v),
            "–" if v.sim_probe_p99_us is None else f"{v.sim_probe_p99_us:.2f}",
            "–" if v.sim_p99_us is None else f"{v.sim_p99_us:.2f}",
            literal(("PASS", "green")) if v.ok else literal(("FAIL", "red"), " ", v.why),
        )
    print_table(con, t)
    f = Table(title="Fabric")
    f.add_column("check")
    f.add_column("result", overflow="fold")  # wrapped whole, never cut
    for c in dr.fabric_checks():
        style = {True: "green", False: "red", None: "default"}[c["ok"]]
        f.add_row(literal(c["check"]), literal((c["result"], style)))
    print_table(con, f)
    for n in dr.s.notes:
        con.print(literal("note: ", n))
    verdict = ("PASS", "bold green") if dr.ok else ("FAIL", "bold red")
    con.print(literal(verdict, "  report: ", str(dr.cfg.out / "report.html")))
