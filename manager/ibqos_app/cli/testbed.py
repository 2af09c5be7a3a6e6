"""`ibqos testbed plan|run|report`: the seed 002 hardware method, automated."""

from __future__ import annotations

from pathlib import Path

import click
from ibqos.docfile import option_error
from ibqos.errors import ExternalError, VerificationFailed
from ibqos.outpath import OUT_DIR, OUT_FILE
from ibqos_testbed import compare, render_report, runplan
from ibqos_testbed.chart import write_png
from ibqos_testbed.planinput import load_plan
from ibqos_testbed.runner import Runner
from ibqos_testbed.runplan import RunPlan
from pydantic import ValidationError

from ._numbers import FiniteFloat

_FILE = click.Path(dir_okay=False, path_type=Path)


@click.group(no_args_is_help=False)  # one line without a command (_main.cli)
def testbed() -> None:
    """Validate a plan on hardware with perftest (two nodes behind one switch)."""


@testbed.command()
@click.argument("plan", type=_FILE)
@click.option("--server", required=True, help="Node that receives (its switch port is measured).")
@click.option("--client", required=True, help="Node that sends.")
@click.option(
    "--server-addr", help="Name/address the client uses for the server [--server, without user@ and brackets]."
)
@click.option(
    "-o", "--output", "out_dir", required=True, type=OUT_DIR, help="Directory for runplan.json and runplan.txt."
)
@click.option("--device", default="mlx5_0", show_default=True, help="HCA (perftest -d).")
@click.option("--ib-port", default=1, show_default=True, type=click.IntRange(1, 254), help="HCA port (perftest -i).")
@click.option(
    "--duration",
    default=10,
    show_default=True,
    type=click.IntRange(1),
    help="Seconds every bandwidth flow runs (perftest -D).",
)
@click.option(
    "--size",
    default=65536,
    show_default=True,
    type=click.IntRange(1),
    help="Bandwidth message size in bytes (perftest -s).",
)
@click.option("--lat-size", default=2, show_default=True, type=click.IntRange(1), help="Latency message size in bytes.")
@click.option(
    "--lat-iters", default=10000, show_default=True, type=click.IntRange(5), help="Latency iterations (perftest -n)."
)
@click.option(
    "--base-port",
    default=18515,
    show_default=True,
    type=click.IntRange(1, 65503),
    help="TCP port of SL 0's bandwidth pair; SL n uses +n, latency +16+n.",
)
@click.option("--report-gbits", is_flag=True, help="Have perftest print Gb/sec.")
@click.option(
    "--slack",
    default=30.0,
    show_default=True,
    type=FiniteFloat(1),
    help="Seconds allowed beyond the measurement before a process is killed.",
)
def plan(
    plan: Path,
    server: str,
    client: str,
    server_addr: str | None,
    out_dir: Path,
    device: str,
    ib_port: int,
    duration: int,
    size: int,
    lat_size: int,
    lat_iters: int,
    base_port: int,
    report_gbits: bool,
    slack: float,
) -> None:
    """Write the perftest commands that validate PLAN.

    PLAN is a plan document written by `ibqos plan`. The run plan goes to
    OUTPUT/runplan.json, the listing of its commands to OUTPUT/runplan.txt.
    """
    summary = load_plan(plan)
    try:  # the run plan's own rules for its hosts and HCA, before anything is written
        settings = runplan.Settings(
            server=server,
            client=client,
            server_addr=server_addr or runplan.address_of(server),
            device=device,
            ib_port=ib_port,
            duration=duration,
            size=size,
            lat_size=lat_size,
            lat_iters=lat_iters,
            base_port=base_port,
            report_gbits=report_gbits,
            slack=slack,
        )
    except ValidationError as e:
        raise option_error(e) from e
    run = runplan.build(summary, settings)
    json_path, txt_path = runplan.write(run, out_dir)
    click.echo(txt_path.read_text(), nl=False)
    click.echo(f"# wrote {json_path} and {txt_path}")


@testbed.command()
@click.argument("runplan_path", metavar="RUNPLAN", type=_FILE)
@click.option("-o", "--results", "results_dir", type=OUT_DIR, help="Results directory [RUNPLAN's directory/results].")
@click.option(
    "--listen-timeout",
    default=30.0,
    show_default=True,
    type=FiniteFloat(0.1),
    help="Seconds to wait for each server to listen.",
)
def run(runplan_path: Path, results_dir: Path | None, listen_timeout: float) -> None:
    """Execute RUNPLAN over ssh (BatchMode) or locally for localhost."""
    plan = RunPlan.load(runplan_path)
    results_dir = results_dir or runplan_path.parent / "results"
    results = Runner(
        plan, results_dir, listen_timeout=listen_timeout, report=lambda line: click.echo(f"ibqos: {line}", err=True)
    ).execute()
    failed = [f for f in results.flows if not f.ok]
    if failed:
        raise ExternalError(f"{len(failed)} of {len(results.flows)} flows failed; what ran is in {results_dir}")
    click.echo(f"all {len(results.flows)} flows ran; next: ibqos testbed report {results_dir}")


@testbed.command()
@click.argument("results_dir", metavar="RESULTS", type=click.Path(path_type=Path))
@click.option(
    "--prediction", type=_FILE, help="Plan document whose analyzer shares to compare with [the run plan's copy]."
)
@click.option("--simulated", type=_FILE, help="Per-SL shares of a simulator run of the same two-node method (JSON).")
@click.option(
    "--tolerance",
    default=None,
    type=FiniteFloat(0),
    help="Largest |measured - predicted| share in percentage points that passes "
    "(default: the plan's verdict.share_tolerance_pp, 2 unless the policy says).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--png", type=OUT_FILE, help="Write a bar chart (share and latency per SL).")
def report(
    results_dir: Path,
    prediction: Path | None,
    simulated: Path | None,
    tolerance: float | None,
    as_json: bool,
    png: Path | None,
) -> None:
    """Compare measured bandwidth shares per SL with the predicted ones."""
    rep = compare.build_report(results_dir, prediction=prediction, simulated=simulated, tolerance=tolerance)
    for note in rep.notes:
        click.echo(note, err=True)
    if png:
        write_png(rep, png)
    if as_json:
        click.echo(render_report.to_json(rep))
    else:
        render_report.print_table(rep)
    if not rep.passed:
        raise VerificationFailed(rep.verdict)
