"""`ibqos verify RUNDIR|--live`: routes, hops, VLs and credit loops of a fabric.

Exit status: 0 clean, 1 defect (unreachable pair, routing loop, credit loop, or ibdmchk
disagreeing), 2 unusable input, 3 a tool failed.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import click
from ibqos.errors import InputError, VerificationFailed
from ibqos.fabric.source import load_fabric
from ibqos.plan import load_plan
from ibqos.redline import engine_in_force, find_osm_log, needs_path_sls, red_line
from ibqos.verify import verify_fabric, verify_per_class, worst
from ibqos.verify.ibdmchk import run_ibdmchk
from ibqos.verify.pathsl import PATH_SL_FILE, from_fabric, read_path_sls
from ibqos.verify.sa_paths import query_path_sls

from ._rundir import plan_beside

if TYPE_CHECKING:
    from ibqos.fabric.model import Fabric
    from ibqos.verify.pathsl import PathSLs
    from ibqos.verify.report import VerifyReport


def _load(source: Path | None, live: bool) -> tuple[Fabric, Path | None]:
    """Dumps first (ibdmchk and the path-SL file sit beside them); a fabric.json as given."""
    lf = load_fabric(source, live=live, env=dict(os.environ), prefer="dumps", default_sl2vl=True)
    for note in lf.notes:
        click.echo(f"note: {note}", err=True)
    return lf.fabric, lf.dumps


@click.command()
@click.argument("rundir", required=False, type=click.Path(path_type=Path))
@click.option(
    "--live",
    is_flag=True,
    help="Read the running fabric instead of dumps "
    "(environment as for infiniband-diags; on ibsim LD_PRELOAD + IBSIM_SOCKNAME).",
)
@click.option("--json", "as_json", is_flag=True, help="The report as JSON on stdout.")
@click.option(
    "--sl",
    type=click.IntRange(0, 15),
    default=None,
    help="SL of every pair, or of pairs without a path record (default 0).",
)
@click.option(
    "--path-sl",
    "path_sl",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Per-pair SLs: `saquery PR` output or an ibdmchk -c file (default: RUNDIR/path-sl if present).",
)
@click.option(
    "--sa-paths/--no-sa-paths",
    default=None,
    help="Ask the running SA for every pair's path record (default with --live unless --sl is given).",
)
@click.option(
    "--ibdmchk", "with_ibdmchk", is_flag=True, help="Cross-check the credit-loop verdict with ibdmchk (dumps only)."
)
@click.option(
    "--osm-log",
    "osm_log",
    type=click.Path(dir_okay=False, path_type=Path),
    help="OpenSM's log, to name the routing engine in force (default: osm.log beside "
    "the dumps; with --live /var/log/opensm.log if readable).",
)
@click.option(
    "--plan",
    "plan_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Check one SL of every class of this plan (default: a plan.json in RUNDIR "
    "or above the dumps; without one, --sl or SL 0).",
)
def verify(
    rundir: Path | None,
    live: bool,
    as_json: bool,
    sl: int | None,
    path_sl: Path | None,
    sa_paths: bool | None,
    with_ibdmchk: bool,
    osm_log: Path | None,
    plan_path: Path | None,
) -> None:
    """Verify RUNDIR (OpenSM dumps, a harness run directory or a fabric .json) or --live."""
    if live == (rundir is not None):
        raise InputError("give either RUNDIR or --live", field="RUNDIR")
    beside = None if rundir is None or plan_path else plan_beside(rundir)  # rundir: not --live
    if beside is not None and (sl is not None or path_sl is not None):
        # one set of defaults: the run's plan gives the SLs; a flag overrides, and says so
        flag = f"--sl {sl}" if sl is not None else f"--path-sl {path_sl}"
        click.echo(f"note: {flag} overrides the SLs of the plan beside the dumps ({beside})", err=True)
        beside = None
    plan_path = plan_path or beside
    plan = None
    if plan_path is not None:
        plan = load_plan(plan_path)
    fabric, dumps = _load(rundir, live)
    psl = None
    if path_sl is not None:
        psl = read_path_sls(path_sl, fabric)
    elif dumps is not None and (dumps / PATH_SL_FILE).exists() and not sa_paths:
        psl = read_path_sls(dumps / PATH_SL_FILE, fabric)
    elif fabric.path_sls is not None and not sa_paths:
        # a saved model (fabric.json) that was read back with the SA's per-pair SLs
        psl = from_fabric(fabric, f"SA path records saved in {rundir}")
    if sa_paths or (sa_paths is None and live and sl is None and psl is None):
        psl = query_path_sls(fabric, dict(os.environ))
    if plan is not None and psl is None and not sa_paths:
        # one SL per class: the classes' SLs share its VLs, so together they raise every
        # channel dependency the plan can create (as the dry run checks)

        by_class = verify_per_class(fabric, plan)
        report = worst(by_class)
        click.echo(
            f"SLs from {plan_path}: "
            + ", ".join(f"{c.sls[0]} ({c.name}: {'ok' if by_class[c.name].ok else 'DEFECT'})" for c in plan.classes),
            err=as_json,
        )
    else:
        report = verify_fabric(fabric, sl=sl or 0, path_sls=psl)

    cross = None
    if with_ibdmchk:
        if dumps is None:
            raise InputError("--ibdmchk needs OpenSM dumps (RUNDIR), not --live or a .json", field="--ibdmchk")

        with tempfile.TemporaryDirectory(prefix="ibqos-ibdmchk-") as work:
            cross = run_ibdmchk(dumps, fabric, work, path_sls=psl)
    agree = cross is None or cross.credit_loops == (not report.cdg_acyclic)

    log = osm_log or find_osm_log(None if live else (dumps or rundir))
    engine = engine_in_force(log)
    loop_line = _loop_line(report, engine, psl)

    if as_json:
        doc = report.to_json()
        doc["routing_in_force"] = {
            "engine": engine,
            "log": str(log) if log else None,
            "credit_loop": not report.cdg_acyclic,
        }
        if cross is not None:
            doc["ibdmchk"] = {"credit_loops": cross.credit_loops, "agrees": agree, "sls": cross.sls, "vls": cross.vls}
        click.echo(json.dumps(doc, indent=1))
        if loop_line:
            click.secho(loop_line, fg="red", bold=True, err=True)
    else:
        click.echo(report.text())
        if cross is not None:
            click.echo(
                f"ibdmchk: {'credit loops' if cross.credit_loops else 'no credit loops'} "
                f"({cross.sls} SLs, {cross.vls} VLs): " + ("agrees" if agree else "DISAGREES with ibqos")
            )
        if loop_line:
            click.secho(loop_line, fg="red", bold=True)
    if not (report.ok and agree):
        found = report.defects() + ([] if agree else ["ibdmchk disagrees with ibqos"])
        raise VerificationFailed("verify: " + "; ".join(found))


def _loop_line(report: VerifyReport, engine: str | None, psl: PathSLs | None) -> str | None:
    """The red line, or a plain warning when one SL for every pair cannot judge a layered engine."""
    if report.cdg_acyclic:
        return None
    if psl is None and needs_path_sls(engine):
        click.echo(
            f"warning: {engine} avoids credit loops with per-path SLs, so the cycle found "
            f"with {report.sl_source} does not prove one: give --path-sl or --live",
            err=True,
        )
        return None
    return red_line(report.cycle, engine)
