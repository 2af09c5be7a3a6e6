"""`ibqos status [RUNDIR | --live] [--plan PLAN] [--opensm-conf PATH [--pid P | --pidfile F]] [--json]
[--verdict FILE]`.

Exit 0 only when nothing is found (ibqos.health lists the checks), 1 with one line per
finding, 2 for unusable input.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click
from ibqos import osmconf, osmlog, paths
from ibqos.apply.confset import ConfigSet, state_dir_for
from ibqos.apply.opensm_ctl import resolve_pid
from ibqos.apply.osm_process import OsmProcess, check_reads, dump_dir, reader, running_options, sms_partitions
from ibqos.apply.service import resolve
from ibqos.apply.sm_role import MasterSm, master_sm, role_of
from ibqos.docfile import check_writable
from ibqos.errors import ExternalError, InputError, VerificationFailed
from ibqos.fabric.dla_record import read_record
from ibqos.fabric.dumps import load_dumps
from ibqos.fabric.ipoib_groups import broadcast_sls
from ibqos.fabric.model import Fabric
from ibqos.fabric.source import find_dumps, load_fabric
from ibqos.findings import Finding
from ibqos.health import (
    Routing,
    checks,
    dla_refusal,
    engine_of,
    ipoib_sl_findings,
    other_config_finding,
    plugin_finding,
    standby_finding,
)
from ibqos.osmunit import restart_hint
from ibqos.outpath import OUT_FILE
from ibqos.plan import load_plan
from ibqos.plan.check import check_ipoib_of
from ibqos.redline import find_osm_log, needs_path_sls
from ibqos.status import sl2vl_by_hop, vlarb_by_role
from ibqos.term import console, literal, print_table
from ibqos.verdict import Verdict
from ibqos.verify.pathsl import PATH_SL_FILE, from_fabric, read_path_sls
from ibqos.verify.sa_paths import query_path_sls
from rich.table import Table

from ..apply.recover import FabricAccess, check_and_recover, current_tampered
from ._rundir import plan_beside
from ._target import named_conf, positive_pid, sweep_seconds

# how status names the OpenSM whose working directory a relative path in its file is taken from
ASK_PID = "give --pid, --pidfile or --service"

if TYPE_CHECKING:
    from ibqos.fabric.local_port import LocalPort
    from ibqos.plan import Plan


@click.command()
@click.argument("rundir", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--live", is_flag=True, help="Read the fabric now (needs umad access to the fabric).")
@click.option(
    "--plan",
    "plan_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The plan to hold the fabric to (default: the applied one, ibqos.d/current/plan.json "
    "of --opensm-conf or --service; for RUNDIR the run's plan.json).",
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
    callback=named_conf,
    help="Also check the configuration ibqos apply manages there; finish or roll back "
    "an apply that was killed half-way (one line says what was found and done).",
)
@click.option(
    "--pid",
    type=int,
    callback=positive_pid,
    help="PID of the running OpenSM (for a recovery sweep; default: the one the journal recorded).",
)
@click.option("--pidfile", type=click.Path(dir_okay=False, path_type=Path), help="File holding that PID.")
@click.option(
    "--timeout", default=120.0, show_default=True, callback=sweep_seconds, help="Seconds to wait for a heavy sweep."
)
@click.option("--sim-socket", metavar="NAME", help="Reach the fabric through ibsim's socket NAME.")
@click.option("--json", "as_json", is_flag=True, help="The findings as JSON on stdout, instead of the tables.")
@click.option(
    "--verdict",
    "verdict_path",
    type=OUT_FILE,
    help="Keep the credit-loop verdict on the tables read here, for `ibqos monitor --verdict`.",
)
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
    as_json: bool,
    verdict_path: Path | None,
    service: str | None,
) -> None:
    """Show what the fabric is programmed with now, per port role and per SL, and whether it is
    what the plan says and sound: exit 1 with one line per finding otherwise."""

    say = (lambda line: None) if as_json else click.echo
    if plan_path is None and rundir is not None and not live:
        # one set of defaults: a run directory is judged by the plan it was made with
        plan_path = plan_beside(rundir)
        if plan_path is not None:
            say(f"plan: {plan_path} (the run's; --plan overrides)")
    plan = load_plan(plan_path) if plan_path else None  # bad input first, before any output
    _check_verdict(verdict_path, live)
    unit = None  # --service's: how a finding says to restart its OpenSM
    if service:
        opensm_conf, pid, osm_log, unit = _of_service(service, opensm_conf, pid, osm_log)
    env = None
    if sim_socket:
        env = dict(os.environ, IBSIM_SOCKNAME=sim_socket, LD_PRELOAD=str(paths.umad2sim_lib()))
    config_line, tampered, master_line, port, records = None, None, None, None, None
    elsewhere: Finding | None = None  # read live: this host's SM runs, on another configuration
    ipoib: Finding | None = None  # read live: the SM's own partitions file against the plan's classes
    group_sls: list[Finding] = []  # read live: the partitions file's IPoIB SLs against the SA's groups
    unchecked: str | None = None  # ... or why it was not checked
    running: int | None = None  # read live: the OpenSM that runs on --opensm-conf
    sm_answers: bool | None = None  # read live: whether a master SM answered sminfo
    if opensm_conf is not None:
        opensm_pid, osm = _target(opensm_conf, pid, pidfile)
        # the OpenSM's subnet, through its port (a recovery resolves it before it writes)
        access = FabricAccess(opensm_pid, env, timeout, conf=opensm_conf, unit=unit)
        config_line = check_and_recover(opensm_conf, access)
        say(config_line)
        if live:
            # the OpenSM that runs on the file: --pid, --pidfile or --service's, else the one
            # that reads it; its dumps and its log are where it opens them
            osm = osm if opensm_pid is not None else reader(opensm_conf)
            records = dump_dir(opensm_conf, osm, ASK_PID)
            running = osm.pid if osm is not None else opensm_pid
            port = access.port_of(opensm_pid)
            master_line, osm_log, master = _live_sm(running, osm, port, opensm_conf, osm_log, env, say)
            sm_answers = master is not None
            # an OpenSM named by PID is the one judged (its command line may be another user's, unread)
            elsewhere = other_config_finding(opensm_conf, osm, port, master) if opensm_pid is None else None
            if running is not None:  # it runs on the file: is it what runs the subnet?
                elsewhere = elsewhere or standby_finding(opensm_conf, running, port, master)
        tampered = current_tampered(opensm_conf)
        if not live and rundir is None:
            if tampered:
                raise VerificationFailed(tampered)
            return
    if live == (rundir is not None):
        raise InputError("give exactly one of RUNDIR or --live", field="status")
    reference, ref_source = None, None
    if live and opensm_conf is not None:
        plan, plan_path, reference, ref_source = _applied(opensm_conf, plan, plan_path, say)
        ipoib, unchecked = _sms_partitions(opensm_conf, osm, plan)
        group_sls, groups_unread = _group_sls(opensm_conf, osm, port, env, (running, unit))
        unchecked = unchecked or groups_unread

    read_at = time.time()
    fabric = load_fabric(rundir, live=live, env=env, at=port).fabric
    if rundir is not None:
        reference, ref_source = _first_run(rundir)
    routing = _routing(fabric, rundir, live, osm_log, records, plan, env, port, sm_answers, (running, unit))

    judged = checks(fabric, plan, str(plan_path) if plan_path else None, routing, reference, ref_source)
    # what runs before what it runs: another configuration, then hand edits of this one
    first = [f for f in (elsewhere, Finding("tampered", tampered) if tampered else None, ipoib) if f]
    judged.findings[:0] = first + group_sls
    judged.notes += [unchecked] if unchecked else []
    if verdict_path is not None:
        Verdict(read_at=read_at, source=fabric.source, engine=routing.engine, credit_loop=judged.credit_loop).save(
            verdict_path
        )
    if as_json:
        doc = {
            "schema": "ibqos.status/1",
            "ok": not judged.findings,
            "source": fabric.source,
            "plan": str(plan_path) if plan_path else None,
            "engine": routing.engine,
            "configuration": config_line,
            "master_sm": master_line,
            "findings": [f.to_json() for f in judged.findings],
            "notes": judged.notes,
        }
        click.echo(json.dumps(doc, indent=1))
    else:
        _show_tables(fabric)
        con = console()
        for d in judged.table_diffs:
            con.print(literal(("≠", "red"), " ", d))
        for line in judged.said + [f"note: {n}" for n in judged.notes]:
            con.print(literal(line), soft_wrap=True)
        for f in judged.findings:
            con.print(literal((f.message, "bold red")), soft_wrap=True)
        if not judged.findings:
            con.print("[green]status: OK[/green]")
    if judged.findings:
        raise VerificationFailed(
            f"status: {len(judged.findings)} finding(s): " + ", ".join(f.kind for f in judged.findings)
        )


def _of_service(
    service: str, opensm_conf: Path | None, pid: int | None, osm_log: Path | None
) -> tuple[Path | None, int | None, Path | None, str]:
    """Debian's unit's config, PID and log, where the options did not name them, and its name."""
    t = resolve(service)
    if t.conf.is_file():
        opensm_conf = opensm_conf or t.conf
    return opensm_conf, pid if pid is not None else t.pid, osm_log or t.log, t.unit


def _target(conf: Path, pid: int | None, pidfile: Path | None) -> tuple[int | None, OsmProcess | None]:
    """The OpenSM --pid or --pidfile names (its PID, and its command line when it can be
    read), which must read `conf`, as apply checks it: a recovery sweep on another OpenSM
    would judge this file's apply by that one's fabric."""
    if pid is None and pidfile is None:
        return None, None
    opensm_pid = resolve_pid(pid, pidfile)
    return opensm_pid, check_reads(opensm_pid, conf)


def _live_sm(
    pid: int | None,
    osm: OsmProcess | None,
    port: LocalPort | None,
    conf: Path,
    osm_log: Path | None,
    env: dict[str, str] | None,
    say: Callable[[str], None],
) -> tuple[str | None, Path | None, MasterSm | None]:
    """Which SM is master on `port`'s subnet (said: a standby's configuration is not what the
    fabric runs), the one that answered (None: none), and the log the OpenSM `osm` writes: --osm-log, else its
    command line's -f, else the file's log_file, a relative one from its working directory, where it
    opens it (with no OpenSM running, a relative one names no log: where it would be is not known)."""
    found = master_sm(env, port)
    master = role_of(pid, port, found)[1] if pid is not None and port is not None else None
    if master:
        say(master)
    if osm_log is not None:
        return master, osm_log, found
    if osm is not None:
        named = osm.log or osm.options(osmconf.options(conf)).get("log_file")
    else:
        named = osmconf.options(conf).get("log_file")
        named = named if named and Path(named).is_absolute() else None
    return master, Path(named) if named else None, found


def _sms_partitions(conf: Path, osm: OsmProcess | None, plan: Plan | None) -> tuple[Finding | None, str | None]:
    """`partitions`: a plan without partitions leaves the SM's own file in force, from which
    OpenSM makes each IPoIB broadcast group (when it makes it: at its start); apply held their
    SLs to the plan's classes (plan.check.check_ipoib_of) and refuses otherwise. Before, an edit
    since (an `ipoib` partition with another sl=) and a restart moved IPoIB's broadcast and
    multicast to another class, and status said nothing. The file is the one the OpenSM that
    reads `conf` opens (its -P, a relative path from its working directory). With none to ask,
    a relative path is not checked, and a note says so (before: skipped unsaid)."""
    if plan is None or plan.partitions is not None:
        return None, None
    try:
        opts = running_options(conf, osmconf.read(conf), osm, ("partition_config_file",), ASK_PID)
    except InputError as e:
        return None, f"the SM's own partitions file not checked against the plan's classes: {e}"
    parts = sms_partitions(opts)
    if parts is None:
        return None, None
    try:
        check_ipoib_of(plan, parts)
    except InputError as e:
        return Finding(
            "partitions",
            f"{e} (the SM's own partitions file, which the plan leaves in force)",
        ), None
    return None, None


def _group_sls(
    conf: Path,
    osm: OsmProcess | None,
    port: LocalPort | None,
    env: dict[str, str] | None,
    running: tuple[int | None, str | None],
) -> tuple[list[Finding], str | None]:
    """`ipoib-sl` (health.ipoib_sl_findings): the partitions file OpenSM reads (the plan's,
    which apply wrote there, or the SM's own) against the SL of each IPoIB broadcast group the
    SA hands out. OpenSM changes a group's SL only at its start: before, an apply that changed
    `sl=` and a status after it both said the fabric equals the plan, with IPoIB's multicast
    on the old SL. Not checked where the file cannot be read as OpenSM opens it (_sms_partitions'
    note says so where a plan needs it); a note says so when the SA does not answer."""
    try:
        opts = running_options(conf, osmconf.read(conf), osm, ("partition_config_file",), ASK_PID)
    except InputError:
        return [], None
    parts = sms_partitions(opts)
    if parts is None or not parts.ipoib_sl:
        return [], None
    try:
        sa = broadcast_sls(env, port)
    except ExternalError as e:
        return [], f"IPoIB broadcast groups' SLs not checked against {parts.file}: {e}"
    pid, unit = running
    restart = restart_hint(pid, unit) if pid is not None else "its unit, or its command line"
    return ipoib_sl_findings(parts, sa, restart), None


def _show_tables(fabric: Fabric) -> None:
    con = console()
    t = Table(title=literal(f"VL arbitration per port role ({fabric.source})"))
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


def _check_verdict(path: Path | None, live: bool) -> None:
    """--verdict is about tables read now (a run directory's were read when it was made), and
    its file must take the write: both said before the fabric is read."""
    if path is not None and not live:
        raise InputError("the verdict is on tables read now: give --live", field="--verdict")
    check_writable(path, "--verdict")


def _applied(
    opensm_conf: Path, plan: Plan | None, plan_path: Path | None, say: Callable[[str], None]
) -> tuple[Plan | None, Path | None, Fabric | None, str | None]:
    """The applied plan of the configuration (unless --plan gave one) and the fabric read back
    at its verified apply (whose links are the planned links)."""

    cs = ConfigSet({}, state_dir_for(opensm_conf))
    version = cs.current_version()
    if version is None:
        return plan, plan_path, None, None
    if plan_path is None and (cs.current / "plan.json").is_file():
        plan_path = cs.current / "plan.json"
        plan = load_plan(plan_path)
        say(f"plan: {plan_path} (applied {version}; --plan overrides)")
    ref = cs.verified_fabric(version)
    if not ref.is_file():
        return plan, plan_path, None, None
    return plan, plan_path, Fabric.load(ref), f"the fabric verified at apply {version}"


def _first_run(rundir: Path) -> tuple[Fabric | None, str | None]:
    """The links of the run's first OpenSM run (its healthy fabric), or None without dumps."""

    try:
        first = find_dumps(rundir, newest=False)
    except InputError:  # no dumps in the run
        return None, None
    return load_dumps(first, require_sl2vl=False), f"the run's first OpenSM run ({first})"


def _routing(
    fabric: Fabric,
    rundir: Path | None,
    live: bool,
    osm_log: Path | None,
    records: Path | None,
    plan: Plan | None,
    env: dict[str, str] | None,
    port: LocalPort | None,
    sm_answers: bool | None,
    running: tuple[int | None, str | None],
) -> Routing:
    """The engine in force, dla's refusal, and the path SLs when the engine layers by SL
    (`records`: where the running OpenSM writes dla's record, when --opensm-conf names it);
    read live, whether an SM answers sminfo (`sm_answers`: already asked, else asked here), and
    whether the OpenSM `running` names (its PID, its --service unit) has this ibqos's plugin
    loaded (health.plugin_finding)."""

    log = osm_log or find_osm_log(None if live else rundir)
    dumps = records
    if rundir is not None:
        try:
            dumps = find_dumps(rundir)
        except InputError:
            dumps = None
    # each read once: the log names the engine, the record dla's refusal or its groups
    lines = osmlog.parse(log, keep=osmlog.ROUTING_LINES) if log is not None else []
    record = read_record(dumps) if dumps is not None else None
    engine = engine_of(lines, record)
    r = Routing(engine, dla_refusal(record, lines) if engine != "dla" else None)
    if engine == "dla":
        r.record = record  # the groups dla routed with (docs/groups.md)
    r.plugin = plugin_finding(record, *running)
    if live:
        if not (sm_answers if sm_answers is not None else master_sm(env, port) is not None):
            r.no_sm = str(port) if port is not None else "libibumad's first port"
        if needs_path_sls(engine) or plan is None:
            try:
                r.path_sls = query_path_sls(fabric, env or dict(os.environ), at=port)
            except ExternalError as e:
                r.path_sls_note = f"no path SLs from the SA: {e}"
    elif rundir is not None and (rundir / PATH_SL_FILE).exists():
        r.path_sls = read_path_sls(rundir / PATH_SL_FILE, fabric)
    elif rundir is not None and fabric.path_sls is not None:
        r.path_sls = from_fabric(fabric, f"SA path records saved in {rundir / 'fabric.json'}")
    return r
