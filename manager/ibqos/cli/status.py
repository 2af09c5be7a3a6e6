"""`ibqos status [RUNDIR | --live] [--plan PLAN]`."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from ..errors import InputError, VerificationFailed


@click.command()
@click.argument("rundir", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--live", is_flag=True, help="Read the fabric now (needs umad access to the fabric).")
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also show where the fabric differs from this plan (exit 1 if it does).")
def status(rundir: Path | None, live: bool, plan_path: Path | None) -> None:
    """Show what the fabric is programmed with now, per port role and per SL."""
    from ..fabric.model import Fabric
    from ..status import sl2vl_by_hop, vlarb_by_role
    if live == (rundir is not None):
        raise InputError("give exactly one of RUNDIR or --live", field="status")
    if live:
        from ..fabric.live import read_live
        fabric = read_live()
    else:
        fabric = Fabric.load(rundir / "fabric.json")
    con = Console()
    t = Table(title=f"VL arbitration per port role ({fabric.source})")
    for col in ("role", "ports", "high (VL:weight)", "low (VL:weight)", "VLHighLimit"):
        t.add_column(col)
    for r in vlarb_by_role(fabric):
        t.add_row(r.role, str(r.ports), r.high, r.low, "–" if r.high_limit is None else str(r.high_limit))
    con.print(t)
    t = Table(title="SL → VL per hop (SL 0..15, hex)")
    for col in ("hop", "SL→VL", "port pairs"):
        t.add_column(col)
    for kind, maps in sorted(sl2vl_by_hop(fabric).items()):
        for m, count in maps.most_common():
            t.add_row(kind, m, str(count))
    con.print(t)
    if plan_path:
        from ..conformance import diff_programmed, expected_from_plan
        from ..plan import Plan
        diffs = diff_programmed(fabric, expected_from_plan(Plan.load(plan_path)))
        if diffs:
            for d in diffs:
                con.print(f"[red]≠[/red] {d}")
            raise VerificationFailed(f"the fabric differs from {plan_path} ({len(diffs)} line(s) above)")
        con.print(f"[green]the fabric equals {plan_path} on every port[/green]")
