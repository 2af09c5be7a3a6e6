"""`ibqos monitor [--plan PLAN | --opensm-conf PATH] [--once] [--json] [--listen ADDR:PORT]
[--textfile FILE] [--state FILE]`: the traffic each class gets on every link, now.

Exit codes as `ibqos status`: 0 nothing found, 1 findings (a class squeezed below its share,
ports without per-SL counters), 2 unusable input (said before the first sample), 3 the fabric
did not answer (with --listen it serves on, the failure exported: monitor.outage), 128+N on a
signal (ibqos.interrupt).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click
from ibqos import osmconf
from ibqos.apply.sm_role import conf_port
from ibqos.docfile import check_writable, parse_json, write_atomic
from ibqos.errors import ExternalError, InputError, VerificationFailed
from ibqos.fabric.live import sample_live
from ibqos.health import plugin_finding
from ibqos.inputfile import read_text
from ibqos.monitor.counters import Sample
from ibqos.monitor.credit import VerdictWatch
from ibqos.monitor.engine import EngineWatch
from ibqos.monitor.export import TOTALS, MonitorCollector, registry_for
from ibqos.monitor.export import write_config as write
from ibqos.monitor.judge import Judged, judge
from ibqos.monitor.opensm import OsmFollow
from ibqos.monitor.outage import Outage
from ibqos.monitor.view import render
from ibqos.outpath import OUT_DIR, OUT_FILE
from ibqos.plan import load_plan
from ibqos.term import console
from prometheus_client import generate_latest, start_http_server
from rich.live import Live

from ._numbers import FiniteFloat
from ._stdio import pause
from ._target import sim_env
from .status import _applied

if TYPE_CHECKING:
    import threading
    from wsgiref.simple_server import WSGIServer

    from ibqos.fabric.local_port import LocalPort
    from ibqos.fabric.model import Fabric
    from ibqos.plan import Plan
    from prometheus_client.registry import CollectorRegistry


def _plan(plan_path: Path | None, opensm_conf: Path | None, say: Callable[[str], None]) -> tuple[Plan, Path | None]:
    if plan_path is not None:
        return load_plan(plan_path), plan_path
    if opensm_conf is None:
        raise InputError("give --plan PLAN or --opensm-conf PATH (its applied plan)", field="--plan")
    osmconf.read(opensm_conf)  # a missing file, a FIFO or a device: named as every input is
    plan, plan_path, _, _ = _applied(opensm_conf, None, None, say)
    if plan is None:
        raise InputError(f"{opensm_conf}: no plan applied there (ibqos apply); give --plan", field="--opensm-conf")
    return plan, plan_path


def _saved(state: Path | None, collector: MonitorCollector) -> Sample | None:
    """The sample a previous run kept in --state, or None (no file yet); the collector goes on
    from the totals kept with it."""
    if state is None or not state.exists():
        return None
    text = read_text(state)
    sample = Sample.from_json(text, str(state))
    totals = parse_json(text, state).get(TOTALS)
    if totals is not None:  # a state from before the totals were kept: they start at 0
        collector.restore(totals, str(state), text)
    return sample


def _plugin(engine: EngineWatch, pid: int | None, judged: Judged) -> tuple[str | None, bool] | None:
    """The plugin OpenSM `pid` (the one followed) loaded, from its own record: its release and
    whether it is not this ibqos's, raised as `ibqos status --live` raises it (finding
    `plugin-version`, first as there); None when that OpenSM wrote no record."""
    own = engine.own_record(pid)
    if found := plugin_finding(own, pid):
        judged.findings.insert(0, found)
    return None if own is None else (own.plugin_version, found is not None)


def _elsewhere(
    follow: OsmFollow | None, env: dict[str, str] | None, at: LocalPort | None, judged: Judged
) -> tuple[bool, bool] | None:
    """Whether the plan's SM is not what runs the subnet, raised as `ibqos status --live` raises
    it (first, as there): (this host's port is the master SM while no OpenSM reads
    --opensm-conf, finding `other-config`; the OpenSM that reads it is not the master, finding
    `standby`); None without --opensm-conf."""
    if follow is None or at is None:
        return None
    other, standby = follow.elsewhere(env, at), follow.standby(env, at)
    judged.findings[:0] = [f for f in (other, standby) if f is not None]
    return other is not None, standby is not None


def _listen(addr: str) -> tuple[str, int]:
    host, sep, port = addr.rpartition(":")
    # ASCII: str.isdigit also takes '²', which int() refuses (an internal error, exit 70)
    if not sep or not re.fullmatch("[0-9]+", port) or not 0 < int(port) < 65536:
        raise InputError(f"{addr!r}: give ADDR:PORT, e.g. 127.0.0.1:9687", field="--listen")
    return host.strip("[]") or "0.0.0.0", int(port)


def _serve(listen: str, registry: CollectorRegistry) -> tuple[WSGIServer, threading.Thread]:
    """The exposition's HTTP server (a daemon thread), bound before the first sample: a port in
    use, a privileged one or an address not of this host is bad input, said at once."""
    host, port = _listen(listen)
    try:
        server, thread = start_http_server(port, addr=host, registry=registry)
    except OSError as e:  # socket.gaierror included
        raise InputError(f"{listen}: {e.strerror or e}", field="--listen") from e
    return server, thread


def _linked(fabric: Fabric) -> Fabric:
    """The sampled fabric, which has a link up: with this host's port down (unplugged, its
    switch off) the reader sees this node alone, and an interval of no links judged was `ok`,
    exit 0, an all-clear."""
    if next(fabric.links(), None) is None:
        raise ExternalError("live read-back: no link up behind this host's port: it is down, no fabric to sample")
    return fabric


class _Sampler:
    """The fabric's counters, through the port of the OpenSM that reads --opensm-conf (followed
    across its restarts), else the first port. With an Outage (--listen), a sample the fabric
    does not answer is None, exported and said once (monitor.outage), not exit 3."""

    def __init__(
        self,
        follow: OsmFollow | None,
        engine: EngineWatch,
        env: dict[str, str] | None,
        at: LocalPort | None,
        limits: tuple[int | None, float],
        outage: Outage | None,
        collector: MonitorCollector,
    ):
        self.follow, self.engine, self.env, self.at = follow, engine, env, at
        self._at_osm = follow.osm if follow is not None else None  # the OpenSM `at` is the port of
        self._rate, self._window = limits
        self._outage, self._collector = outage, collector

    def followed(self) -> int | None:
        """The PID of the OpenSM that reads --opensm-conf at this sample, None: none does."""
        osm = self.follow.osm if self.follow is not None else None
        return osm.pid if osm is not None else None

    def __call__(self) -> tuple[Fabric, Sample] | None:
        try:
            got = self._read()
        except ExternalError as e:
            if self._outage is None:
                raise
            self._outage.fail(e)
            self._collector.failed(self.followed())
            return None
        if self._outage is not None:
            self._outage.ok()
        self._collector.read()
        return got

    def _read(self) -> tuple[Fabric, Sample]:
        follow = self.follow
        if follow is not None:
            if follow.check() and follow.osm is not None:
                self.engine.follow(follow.osm)
            if follow.osm is not None and follow.osm != self._at_osm:
                # restarted, maybe with another -g: read through the new one's port (asked again
                # at the next sample when that fails, not left at the old one's)
                self.at, self._at_osm = conf_port(follow.conf, follow.osm, self.env), follow.osm
        fabric, text = sample_live(self.env, at=self.at, rate=self._rate, window=self._window)
        return _linked(fabric), Sample.from_json(text, "ibqos-readback")


def _export(
    collector: MonitorCollector, judged: Judged, engine: EngineWatch, verdict: VerdictWatch, sampler: _Sampler
) -> None:
    """The interval judged, with what the files and the OpenSM followed say now, to the metrics."""
    pid = sampler.followed()
    plugin = _plugin(engine, pid, judged)
    roles = _elsewhere(sampler.follow, sampler.env, sampler.at, judged)
    collector.update(
        judged,
        engine.current(),
        verdict.verdict(),
        verdict_unreadable=verdict.unreadable,
        opensm_pid=pid,
        plugin=plugin,
        other_config=roles[0] if roles is not None else None,
        standby=roles[1] if roles is not None else None,
    )


def _check_options(once: bool, count: int | None, listen: str | None) -> None:
    if once and listen:
        raise InputError("serves until stopped, and --once stops after one interval: use --textfile", field="--listen")
    if once and count is not None:
        raise InputError("--once is one interval: give --once or --count N", field="--count")


def _check_outputs(textfile: Path | None, state: Path | None) -> None:
    check_writable(textfile, "--textfile")
    if textfile is not None and textfile.suffix != ".prom":
        raise InputError(f"{textfile}: node_exporter's textfile collector reads only *.prom files", field="--textfile")
    check_writable(state, "--state")


@click.command()
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False, path_type=Path), help="The plan to judge against.")
@click.option(
    "--opensm-conf",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Judge against the plan applied there (ibqos.d/current/plan.json).",
)
@click.option(
    "--interval", type=FiniteFloat(0.1, 3600), default=10.0, show_default=True, help="Seconds between samples."
)
@click.option("--once", is_flag=True, help="One interval (or, with --state, since the saved sample), then exit.")
@click.option("--count", type=click.IntRange(1), help="Stop after this many intervals.")
@click.option("--json", "as_json", is_flag=True, help="The judged links as JSON on stdout.")
@click.option(
    "--listen",
    metavar="ADDR:PORT",
    help="Serve the Prometheus exposition here, until stopped: a sample the fabric does not answer is "
    "exported (ibqos_monitor_last_sample_success 0), not an exit.",
)
@click.option(
    "--textfile",
    type=OUT_FILE,
    help="Write the metrics for node_exporter's textfile collector.",
)
@click.option(
    "--state",
    type=OUT_FILE,
    help="Keep the last sample here; the next run measures from it (cron with --once).",
)
@click.option(
    "--rate",
    type=click.IntRange(0),
    default=40000,
    show_default=True,
    help="At most this many MADs per second to the fabric (0: only the window of 16 bounds it).",
)
@click.option(
    "--window",
    type=FiniteFloat(0, 10),
    default=0.05,
    show_default=True,
    help="Read each port's per-SL counters again this many seconds after the first answer: the shares "
    "of links whose 32-bit counters wrap within --interval (HDR, NDR) come from this sub-window (0: none).",
)
@click.option(
    "--saturation",
    type=FiniteFloat(0, 1),
    default=0.9,
    show_default=True,
    help="Utilisation from which a link is saturated.",
)
@click.option("--sim-socket", metavar="NAME", help="Reach the fabric through ibsim's socket NAME.")
@click.option(
    "--osm-log",
    type=click.Path(dir_okay=False, path_type=Path),
    help="OpenSM's log, to name the routing engine in force (else dla's record beside --opensm-conf's dumps).",
)
@click.option(
    "--verdict",
    "verdict_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Export the credit-loop verdict `ibqos status --live --verdict FILE` keeps here.",
)
@click.option(
    "--write-config",
    type=OUT_DIR,
    help="Write the Prometheus alerting rules and the Grafana dashboard for these metrics here, and exit "
    "(give the --interval the monitor samples at, from cron the cron period: no sample in three is down).",
)
def monitor(
    plan_path: Path | None,
    opensm_conf: Path | None,
    interval: float,
    once: bool,
    count: int | None,
    as_json: bool,
    listen: str | None,
    textfile: Path | None,
    state: Path | None,
    rate: int | None,
    window: float,
    saturation: float,
    sim_socket: str | None,
    osm_log: Path | None,
    verdict_path: Path | None,
    write_config: Path | None,
) -> None:
    """Sample every port's per-SL and per-VL counters over the PMA and judge each class's share
    of every link against the plan: exit 1 with one line per finding."""

    say = (lambda line: None) if as_json else click.echo
    if write_config is not None:
        for path in write(write_config, saturation, interval):
            say(f"wrote {path}")
        return
    _check_options(once, count, listen)
    plan, plan_path = _plan(plan_path, opensm_conf, say)
    _check_outputs(textfile, state)
    collector = MonitorCollector()
    prev = _saved(state, collector)

    def warn(line: str) -> None:
        click.echo(line, err=True)

    # the OpenSM that reads --opensm-conf, found again after a restart (monitor.opensm)
    follow = OsmFollow(opensm_conf, warn) if opensm_conf is not None else None
    osm = follow.osm if follow is not None else None
    engine = EngineWatch(opensm_conf, osm_log, osm, warn)
    engine.engine()  # a relative dump_files_dir with no OpenSM to take it from: said before the first sample
    verdict = VerdictWatch(verdict_path, warn=warn)
    verdict.start()  # a file that is not a verdict is bad input, said before the first sample
    env = sim_env(sim_socket)
    # the subnet of the OpenSM that reads --opensm-conf, through its port (else the first)
    at = conf_port(opensm_conf, osm, env) if opensm_conf is not None else None
    collector.follows_opensm = follow is not None
    registry = registry_for(collector)
    server = _serve(listen, registry) if listen else None
    if server is not None:
        say(f"metrics: http://{listen}/metrics")

    # --listen serves until stopped: a sample the fabric does not answer is exported and said
    # once, and the next one tried, where it ended the exporter with exit 3 (monitor.outage)
    outage = Outage(warn, interval) if listen else None
    sampler = _Sampler(follow, engine, env, at, (rate, window), outage, collector)

    rounds = 1 if once else count
    done, judged = 0, None
    live = None
    if not once and not as_json:
        live = Live(auto_refresh=False)
        live.start()
    try:
        while True:
            # a failed sample counts as an interval (--count ends through an outage); the
            # sample after it is measured from the last one read, so the totals count the outage
            if (got := sampler()) is not None:
                fabric, cur = got
                if prev is None or cur.time <= prev.time:
                    if prev is not None:
                        # the previous sample is from a clock ahead of this one (stepped back, or
                        # the state copied from another host): no negative interval, measure from now on
                        where = state or "the previous sample"
                        warn(f"ibqos: {where}: its sample is not older than this one; measuring from now")
                    prev = cur
                    pause(interval)
                    continue
                judged = judge(plan, fabric, prev, cur, saturation)
                _export(collector, judged, engine, verdict, sampler)
                if state is not None:
                    write_atomic(state, cur.to_json({TOTALS: collector.totals_json()}))
                if live is not None:
                    live.update(render(judged, plan), refresh=True)
                prev = cur
            if textfile is not None:  # a failed sample's too: node_exporter reads the failure
                write_atomic(textfile, generate_latest(registry))
            done += 1
            if rounds is not None and done >= rounds:
                break
            pause(interval)
    finally:
        if live is not None:
            live.stop()
        if server is not None:
            # stop serving before exit, whatever stopped the loop: no scrape sees a dying process
            server[0].shutdown()
            server[0].server_close()
            server[1].join(timeout=5)
    if outage is not None and outage.error is not None:
        raise outage.error  # --count ended on a sample that failed: the fabric did not answer
    assert judged is not None
    if as_json:
        doc = {
            "schema": "ibqos.monitor/1",
            "ok": not judged.findings,
            "plan": str(plan_path) if plan_path else None,
            "classes": [c.name for c in plan.classes],
            "interval_s": round(judged.interval_s, 6),
            "engine": collector.engine,
            # --opensm-conf: the OpenSM that reads it at the last sample (null: none runs)
            **({"opensm_pid": collector.opensm_pid} if follow is not None else {}),
            "credit_loop": None if collector.verdict is None else collector.verdict.model_dump(by_alias=True),
            "links": [link.to_json() for link in judged.links],
            "findings": [f.to_json() for f in judged.findings],
            # link directions counted now but not at the previous sample (they came up): next time
            "without_baseline": judged.unbaselined,
        }
        click.echo(json.dumps(doc, indent=1))
    elif live is None:
        console().print(render(judged, plan))
    if judged.findings:
        raise VerificationFailed("\n".join(f.message for f in judged.findings))
