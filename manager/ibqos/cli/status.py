"""`ibqos status [RUNDIR | --live] [--plan PLAN] [--opensm-conf PATH [--pid P | --pidfile F]]`."""

from __future__ import annotations

from pathlib import Path

import click
from rich.markup import escape
from ..term import console, print_table
from rich.table import Table

from ..errors import InputError, VerificationFailed
from ._rundir import plan_beside


@click.command()
@click.argument("rundir", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--live", is_flag=True, help="Read the fabric now (needs umad access to the fabric).")
@click.option(
    "--plan",
    "plan_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also show where the fabric differs from this plan (exit 1 if it does; default: "
    "the plan.json of RUNDIR, as verify and simulate take it).",
)
@click.option(
    "--osm-log",
    "osm_log",
    type=click.Path(dir_okay=False, path_type=Path),
    help="OpenSM's log, to name the routing engine in force (default: the newest "
    "osm.log in RUNDIR; with --live /var/log/opensm.log if readable).",
)
@click.option(
    "--opensm-conf",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also check the configuration ibqos apply manages there; finish or roll back "
    "an apply that was killed half-way (one line says what was found and done).",
)
@click.option(
    "--pid", type=int, help="PID of the running OpenSM (for a recovery sweep; default: the one the journal recorded)."
)
@click.option("--pidfile", type=click.Path(dir_okay=False, path_type=Path), help="File holding that PID.")
@click.option("--timeout", default=120.0, show_default=True, help="Seconds to wait for a heavy sweep.")
@click.option("--sim-socket", metavar="NAME", help="Reach the fabric through ibsim's socket NAME.")
@click.option(
    "--service",
    metavar="opensm@GUID",
    help="Debian's per-port unit: its config, log and PID (instead of --opensm-conf, --pid and --osm-log).",
)
def status(
    rundir: Path | None,
    live: bool,
    plan_path: Path | None,
    osm_log: Path | None,
    opensm_conf: Path | None,
    pid: int | None,
    pidfile: Path | None,
    timeout: float,
    sim_socket: str | None,
    service: str | None,
) -> None:
    """Show what the fabric is programmed with now, per port role and per SL."""
    from ..plan import Plan
    from ..status import sl2vl_by_hop, vlarb_by_role

    if plan_path is None and rundir is not None and not live:
        # one set of defaults: a run directory is judged by the plan it was made with
        plan_path = plan_beside(rundir)
        if plan_path is not None:
            click.echo(f"plan: {plan_path} (the run's; --plan overrides)")
    plan = Plan.load(plan_path) if plan_path else None  # bad input first, before any output
    if service:
        from ..apply.service import resolve

        t = resolve(service)
        if t.conf.is_file():
            opensm_conf = opensm_conf or t.conf
        pid = pid if pid is not None else t.pid
        osm_log = osm_log or t.log
    env, tampered = None, None
    if sim_socket:
        import os

        from .. import paths

        env = dict(os.environ, IBSIM_SOCKNAME=sim_socket, LD_PRELOAD=str(paths.umad2sim_lib()))
    if opensm_conf is not None:
        from ..apply.opensm_ctl import resolve_pid
        from ..apply.recover import FabricAccess, check_and_recover, current_tampered

        opensm_pid = resolve_pid(pid, pidfile) if (pid is not None or pidfile is not None) else None
        click.echo(check_and_recover(opensm_conf, FabricAccess(opensm_pid, env, timeout)))
        tampered = current_tampered(opensm_conf)
        if not live and rundir is None:
            if tampered:
                raise VerificationFailed(tampered)
            return
        if tampered:
            click.echo(tampered)
    if live == (rundir is not None):
        raise InputError("give exactly one of RUNDIR or --live", field="status")
    from ..fabric.source import load_fabric

    fabric = load_fabric(rundir, live=live, env=env).fabric
    con = console()
    t = Table(title=escape(f"VL arbitration per port role ({fabric.source})"))
    for col in ("role", "ports", "high (VL:weight)", "low (VL:weight)", "VLHighLimit"):
        t.add_column(col)
    for r in vlarb_by_role(fabric):
        # a space after each entry: a long table wraps between entries, never inside a weight
        t.add_row(
            r.role,
            str(r.ports),
            r.high.replace(",", ", "),
            r.low.replace(",", ", "),
            "–" if r.high_limit is None else str(r.high_limit),
        )
    print_table(con, t)
    t = Table(title="SL → VL per hop (SL 0..15, hex)")
    for col in ("hop", "SL→VL", "port pairs"):
        t.add_column(col)
    for kind, maps in sorted(sl2vl_by_hop(fabric).items()):
        for m, count in maps.most_common():
            t.add_row(kind, m, str(count))
    print_table(con, t)
    failures = ["a stored configuration version was changed by hand"] if opensm_conf and tampered else []
    loop = _routing_in_force(con, fabric, rundir, live, osm_log)
    if loop:
        con.print(f"[bold red]{escape(loop)}[/bold red]", soft_wrap=True, markup=True, highlight=False)
        failures.append("the routing in force has a credit loop")
    if plan_path:
        from ..conformance import diff_programmed, expected_from_plan

        diffs = diff_programmed(fabric, expected_from_plan(plan))
        if diffs:
            for d in diffs:
                con.print(f"[red]≠[/red] {escape(d)}")
            failures.append(f"the fabric differs from {plan_path} ({len(diffs)} line(s) above)")
        else:
            con.print(f"[green]the fabric equals {escape(str(plan_path))} on every port[/green]")
        from ..conformance import mtu_findings, mtu_unread

        low = mtu_findings(fabric, plan.fabric.mtu)
        unread = mtu_unread(fabric)
        if unread:
            con.print(escape(f"note: link MTU not checked on {unread} ports: {fabric.source} carries no MTU"))
        for f in low:
            con.print(f"[red]≠[/red] {escape(str(f))}", soft_wrap=True, highlight=False)
        if low:
            failures.append(f"{len(low)} port(s) run below the plan's MTU {plan.fabric.mtu}")
    if failures:
        raise VerificationFailed("; ".join(failures))


def _routing_in_force(con, fabric, rundir: Path | None, live: bool, osm_log: Path | None) -> str | None:
    """Check the routing in force for credit loops: the red line, or None (with a note when it
    cannot be judged)."""
    import os

    from ..errors import ExternalError
    from ..redline import engine_in_force, find_osm_log, needs_path_sls, red_line
    from ..verify import verify_fabric
    from ..verify.pathsl import PATH_SL_FILE, from_fabric, read_path_sls

    engine = engine_in_force(osm_log or find_osm_log(None if live else rundir))
    psl = None
    if live:
        from ..verify.sa_paths import query_path_sls

        try:
            psl = query_path_sls(fabric, dict(os.environ))
        except ExternalError as e:
            con.print(escape(f"note: no path SLs from the SA ({e}); SL 0 assumed for every pair"))
    elif (rundir / PATH_SL_FILE).exists():
        psl = read_path_sls(rundir / PATH_SL_FILE, fabric)
    elif fabric.path_sls is not None:
        psl = from_fabric(fabric, f"SA path records saved in {rundir / 'fabric.json'}")
    if psl is None and needs_path_sls(engine):
        con.print(
            f"note: credit loops not checked: {engine} gives each path its own SL, and "
            "no path SLs are known here (use --live with the SM running)"
        )
        return None
    report = verify_fabric(fabric, path_sls=psl)
    if report.cdg_acyclic:
        con.print(
            f"routing in force ({engine or 'engine unknown'}): no credit loops ({report.sl_source})", highlight=False
        )
        return None
    return red_line(report.cycle, engine)
