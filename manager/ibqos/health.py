"""Is the fabric what was planned, and is it sound? The findings `ibqos status` exits on.

`ibqos status` exits 0 only when none of these finds anything (docs/verify.md, "status"):

- engine: the engine in force (OpenSM's log; dla's record) is the plan's; after a refusal
  the QoS plan is not in force, whatever the fallback engine routes;
- tables: SL2VL, VLArb and VLHighLimit on every port equal the plan (ibqos.conformance);
- routing: every CA pair reachable, no LID loop in the LFTs, the channel dependency graph
  acyclic for the SLs really used (the verifier's one check, VerifyReport.findings);
- links: no planned link is down. The planned links are those of a fabric read back when
  the plan was known good: for a configuration `ibqos apply` manages, the read-back of the
  last verified apply (`ibqos.d/readbacks/<version>.fabric.json`); for a run directory, its first
  OpenSM run (the dry run routes the healthy fabric before any --fault);
- MTU: every linked port's active MTU at least the plan's (`conformance.mtu_findings`);
- plugin: read live, the plugin the running OpenSM loaded is this ibqos's release (its record,
  `plugin_finding`, which `ibqos monitor` raises too): after an upgrade the old one runs until
  OpenSM restarts;
- SM: read live, a master SM answers `sminfo` out of the port the fabric is read through
  (with none, the tables are the last SM's and nothing keeps them);
- configuration: read live with --opensm-conf, the master SM is not this host's port run by
  an OpenSM on another file (`other_config_finding`, which `ibqos monitor` raises too): then
  that file is what runs, not what ibqos applied and verified; and the OpenSM that reads it
  is the master (`standby_finding`): after a failover another SM's files run the subnet;
- IPoIB: read live with --opensm-conf, each `ipoib` partition's broadcast group is on its
  `sl=` at the SA (`ipoib_sl_findings`, which `apply` ends on too): OpenSM sets a group's SL
  only when it creates it, at its start;
- data VLs: every linked port's VLCap holds the plan's data VLs (`conformance.data_vls_below`):
  apply refuses such a plan, but a plan deployed by hand, or a port replaced since by one
  that runs fewer VLs, leaves classes without their VLs; and every port that can run them
  operates them (`conformance.op_vls_below`): an SM whose max_op_vls caps OperVLs below the
  plan's drops the packets of every SL mapped past them.

What cannot be judged (no plan, no reference fabric) is a note, not a finding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from . import osmconf, osmlog
from .apply.osm_process import OsmProcess, running
from .apply.sm_role import given_guid, role_of
from .conformance import (
    data_vls_below,
    diff_programmed,
    expected_from_plan,
    mtu_findings,
    mtu_unread,
    op_vls_below,
    op_vls_text,
    shortfall_text,
)
from .errors import IbqosError
from .fabric.dla_record import plugin_mismatch
from .fabric.groups import NotADragonfly
from .fabric.model import Fabric
from .findings import Finding
from .osmplugin import replaced_line
from .osmunit import restart_hint
from .policy.partitions import Partitions, pkeys_in
from .redline import needs_path_sls, red_line
from .verify import verify_fabric, verify_per_class, worst

if TYPE_CHECKING:
    from .apply.sm_role import MasterSm
    from .fabric.dla_record import DlaRecord
    from .fabric.local_port import LocalPort
    from .osmlog import LogLine
    from .plan import Plan
    from .verify.pathsl import PathSLs

MAX_LINKS_NAMED = 3


@dataclass
class Routing:
    """What the routing in force is judged with."""

    engine: str | None  # OpenSM's last routing pass (log), or dla from its record
    refusal: str | None = None  # dla's reason, when it refused
    path_sls: PathSLs | None = None  # when known
    path_sls_note: str | None = None  # why they are not known
    record: DlaRecord | None = None  # of the sweep in force, when dla routes
    no_sm: str | None = None  # read live: the port out of which no SM answered sminfo
    plugin: Finding | None = None  # read live: the running OpenSM's plugin is another release's (plugin_finding)


@dataclass
class Judged:
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    said: list[str] = field(default_factory=list)  # what holds, for people (one line each)
    table_diffs: list[str] = field(default_factory=list)
    # the verifier's credit-loop verdict on the routing: None when it could not judge it
    credit_loop: bool | None = None


def engine_finding(planned: str, routing: Routing) -> Finding | None:
    engine = routing.engine
    if engine == planned:
        return None
    if engine is None:
        return Finding(
            "engine-unknown",
            f"engine in force unknown: no OpenSM log names it, so the planned {planned} is not "
            "confirmed (give --osm-log)",
            {"planned": planned},
        )
    why = f"{planned} refused: {routing.refusal}" if routing.refusal else f"the plan routes with {planned}"
    return Finding(
        "qos-not-in-force",
        f"QoS not in force: {engine} routes ({why})",
        {"engine": engine, "planned": planned, "refusal": routing.refusal},
    )


def table_finding(
    fabric: Fabric, plan: Plan, plan_source: str, record: DlaRecord | None = None
) -> tuple[Finding | None, list[str]]:
    try:
        diffs = diff_programmed(fabric, expected_from_plan(plan), record=record)
    except NotADragonfly as e:
        # dla's port roles exist only on a dragonfly: no port can carry the plan's tables
        return Finding("tables", f"the tables cannot be as {plan_source} plans: no dragonfly ({e})"), []
    if not diffs:
        return None, diffs
    return (
        Finding(
            "tables",
            f"the tables differ from {plan_source} on {len(diffs)} port(s), first: {diffs[0]}",
            {"differences": diffs},
        ),
        diffs,
    )


def routing_findings(fabric: Fabric, plan: Plan | None, routing: Routing, out: Judged) -> None:
    """Reachability, LID loops and credit loops, from the verifier; the SLs are the path SLs
    when known, else one SL per class of the plan (dla's case), else SL 0."""
    psl = routing.path_sls
    layered = needs_path_sls(routing.engine)
    if psl is not None:
        report = verify_fabric(fabric, path_sls=psl)
        sls = report.sl_source
    elif plan is not None and not layered:
        report = worst(verify_per_class(fabric, plan))
        sls = "one SL per class of the plan: " + ", ".join(f"{c.sls[0]} ({c.name})" for c in plan.classes)
    else:
        report = verify_fabric(fabric)
        sls = report.sl_source
    for f in report.findings():
        if f.kind == "credit-loop":
            if layered and psl is None:
                continue  # one SL for every pair cannot judge an engine that layers by SL
            out.credit_loop = True
            out.findings.append(
                Finding(f.kind, red_line(report.cycle, routing.engine), f.data | {"engine": routing.engine})
            )
            continue
        out.findings.append(f)
    if layered and psl is None:
        out.findings.append(
            Finding(
                "cdg-unchecked",
                f"credit loops not checked: {routing.engine} gives each path its own SL, and no "
                f"path SLs are known here ({routing.path_sls_note or 'use --live with the SM running'})",
                {"engine": routing.engine},
            )
        )
    elif report.cdg_state == "acyclic":
        out.credit_loop = False
        engine = routing.engine or "engine unknown"
        out.said.append(f"routing in force ({engine}): no credit loops ({sls})")
    if report.ok:
        out.said.append(f"every CA pair reachable ({report.delivered}/{report.pairs}), no routing loops")


def link_finding(reference: Fabric, fabric: Fabric, ref_source: str) -> Finding | None:
    """Links of `reference` missing from `fabric` (a node gone takes its links with it)."""
    now = set(fabric.links())
    down = [link for link in reference.links() if link not in now]
    if not down:
        return None

    def end(guid: int, port: int) -> str:
        n = reference.nodes[guid]
        return f"{n.desc or hex(guid)}:{port}"

    names = [f"{end(a, p)} – {end(b, q)}" for a, p, b, q in down]
    more = f" and {len(names) - MAX_LINKS_NAMED} more" if len(names) > MAX_LINKS_NAMED else ""
    total = sum(1 for _ in reference.links())
    return Finding(
        "link-down",
        f"planned link down: {len(down)} of {total} links of {ref_source} ({', '.join(names[:MAX_LINKS_NAMED])}{more})",
        {"links": names},
    )


def checks(
    fabric: Fabric,
    plan: Plan | None,
    plan_source: str | None,
    routing: Routing,
    reference: Fabric | None,
    ref_source: str | None,
) -> Judged:
    """Every finding, in the order an admin reads them: engine, tables, routing, links, MTU."""
    out = Judged()
    if routing.no_sm is not None:
        out.findings.append(
            Finding(
                "no-sm",
                f"no SM answers on this subnet (sminfo out of {routing.no_sm}): the tables read are what "
                "the last SM left; nothing configures a port that comes up, routes around a link that "
                "goes down, or answers path queries",
                {"port": routing.no_sm},
            )
        )
    if routing.plugin is not None:
        out.findings.append(routing.plugin)
    if plan is None:
        out.notes.append("no plan: engine, tables and links not compared (give --plan, --opensm-conf or --service)")
    else:
        if f := engine_finding(plan.fabric.routing, routing):
            out.findings.append(f)
        else:
            out.said.append(f"engine in force: {routing.engine}, as planned")
        f, out.table_diffs = table_finding(fabric, plan, plan_source or "the plan", routing.record)
        if f:
            out.findings.append(f)
        else:
            out.said.append(f"the fabric equals {plan_source} on every port")
    routing_findings(fabric, plan, routing, out)
    if reference is None:
        if plan is not None:
            out.notes.append("planned links not checked: no fabric read back at a verified apply")
    elif f := link_finding(reference, fabric, ref_source or "the reference fabric"):
        out.findings.append(f)
    else:
        out.said.append(f"every planned link up ({ref_source})")
    if plan is not None:
        low = mtu_findings(fabric, plan.fabric.mtu)
        out.findings += [Finding("mtu", str(m), {"node": m.node, "port": m.port, "mtu": m.active}) for m in low]
        if unread := mtu_unread(fabric):
            out.notes.append(f"link MTU not checked on {unread} ports: {fabric.source} carries no MTU")
        elif not low:
            out.said.append(f"every link runs at least the plan's MTU {plan.fabric.mtu}")
        if below := data_vls_below(fabric, plan.fabric.data_vls):
            short = shortfall_text(below, plan.fabric.data_vls)
            out.findings.append(Finding("data-vls", short, {"ports": below}))
        if capped := op_vls_below(fabric, plan.fabric.data_vls):
            out.findings.append(Finding("op-vls", op_vls_text(capped, plan.fabric.data_vls), {"ports": capped}))
    return out


def plugin_finding(record: DlaRecord | None, running: int | None, unit: str | None = None) -> Finding | None:
    """`plugin-version` when OpenSM `running` wrote `record` with another release's plugin
    loaded (dla_record.plugin_mismatch), or runs a plugin file replaced on disk since its start
    (osmplugin: an upgrade that kept the release), naming how to restart it (its unit: `unit`,
    --service's, else the one it runs in). A record another OpenSM wrote says nothing of
    `running`'s plugin. `ibqos status --live`, `ibqos monitor` and `apply` all raise it here."""
    if record is None or running is None or record.osm_pid != running:
        return None
    restart = restart_hint(running, unit)
    why = plugin_mismatch(record, restart) or replaced_line(running, restart)
    return Finding("plugin-version", why) if why else None


def other_config_finding(
    conf: Path, osm: OsmProcess | None, port: LocalPort | None, master: MasterSm | None
) -> Finding | None:
    """`other-config`: no running OpenSM reads `conf` (`osm`, the one that does, is None), yet
    the master SM is this host's port (`port`, the one `conf`'s OpenSM binds): an OpenSM started
    on another file (its -F) runs the subnet, and whatever that file names (QoS policy,
    partitions, options) is not what ibqos applied and verified. Before, status judged the
    fabric against `conf`'s plan alone and said OK when the tables happened to agree, and
    `ibqos monitor --opensm-conf` said nothing. `ibqos status --live` and `ibqos monitor` both
    raise it here."""
    if osm is not None or master is None or port is None or master.guid != port.guid:
        return None
    procs = running()
    if any(o.reads(conf) for o in procs):  # two at once (the monitor follows neither): not another file
        return None
    # a multi-port host runs one OpenSM per port (opensm@GUID: -g): those told another port
    # are not the master's; one told none binds the first port up, which may be it
    others = ", ".join(
        f"pid {o.pid} reads {o.conf}" + ("" if given else " (no -g or guid: the first port up)")
        for o in procs
        if (given := given_guid(o, _options_of(o))) is None or given[0] == port.guid
    )
    return Finding(
        "other-config",
        f"no running OpenSM reads {conf}, yet the master SM is this host's port 0x{port.guid:016x}: an "
        f"OpenSM started on another configuration runs the subnet, not what ibqos applied "
        f"({others or 'none visible in /proc'}); restart it on {conf}, or give --opensm-conf its file",
        {"port": f"0x{port.guid:016x}"},
    )


def standby_finding(conf: Path, pid: int, port: LocalPort, master: MasterSm | None) -> Finding | None:
    """`standby`: the OpenSM `pid` that runs on `conf` (on `port`) is not the master SM: the
    master, which ibqos did not apply `conf` to, configures the subnet from its own files (QoS
    policy, partitions, options), and the tables read are the ones it programmed. Before,
    status judged them against `conf`'s plan and said OK when they happened to agree, after a
    failover to an SM that runs another configuration too."""
    is_master, line = role_of(pid, port, master)
    if is_master:
        return None
    return Finding(
        "standby",
        f"{line}: the master SM configures the subnet from its own files, not from {conf}, which is "
        "what ibqos applied and verified here; run 'ibqos status --live' on the master's host (and "
        "'ibqos apply PLAN' there, if it runs another plan)",
        {"master": str(master) if master is not None else None},
    )


def ipoib_sl_findings(parts: Partitions, sa: dict[int, int], restart: str) -> list[Finding]:
    """`ipoib-sl`: an `ipoib` partition of `parts` (the partitions file OpenSM reads) whose
    broadcast group the SA (`sa`, ipoib_groups.broadcast_sls) hands out on another SL than its
    `sl=`: OpenSM sets a group's SL when it creates it, at its start, and keeps it through every
    sweep, so a changed `sl=` is in the file and not in force, and IPoIB's broadcast and
    multicast run in another class than its unicast. `restart` says how to restart OpenSM. A
    partition without a group at the SA (none made, or not read) is not judged here."""
    found = []
    written = pkeys_in(parts.text)
    for pkey, (sl, line) in sorted(parts.ipoib_sl.items(), key=lambda kv: kv[1][1]):  # in the file's order
        want, now = sl or 0, sa.get(pkey)
        if now is None or now == want:
            continue
        name = f"{parts.pkeys.get(pkey, '')} (P_Key {written.get(pkey, f'0x{pkey:04x}')})".lstrip()
        found.append(
            Finding(
                "ipoib-sl",
                f"{parts.file}:{line}: the IPoIB broadcast group of partition {name} is on SL {now} at the SA, "
                f"this file says sl={want}: OpenSM sets a group's SL only when it creates it, at its start, so "
                f"IPoIB's broadcast and multicast stay on SL {now} until then: restart OpenSM ({restart})",
                {"pkey": f"0x{pkey:04x}", "sa_sl": now, "sl": want},
            )
        )
    return found


def _options_of(osm: OsmProcess) -> dict[str, str]:
    """The options of the file OpenSM `osm` reads, as it sees it (its mount namespace); none
    when it cannot be read here."""
    try:
        return osmconf.options(Path(f"/proc/{osm.pid}/root") / osm.conf.relative_to("/"))
    except (IbqosError, OSError, ValueError):
        return {}


def dla_refusal(record: DlaRecord | None, lines: list[LogLine]) -> str | None:
    """dla's reason for refusing: its record (error and reason), else its lines in the log."""
    if record is not None:
        return record.refusal
    said = [s for s in osmlog.engine_complaints(lines, "dla") if (osmlog.error_code(s) or "").startswith("D1A")]
    return "; ".join(said) or None


def engine_of(lines: list[LogLine], record: DlaRecord | None) -> str | None:
    """The engine in force: OpenSM's log names it; without a log, dla's record when it routed."""
    used = osmlog.configured_engines(lines)
    if used:
        return used[-1]
    return "dla" if record is not None and record.engine.status == "routed" else None
