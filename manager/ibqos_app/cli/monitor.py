"""`ibqos monitor [--plan PLAN | --opensm-conf PATH] [--once] [--json] [--listen ADDR:PORT]
[--textfile FILE] [--state FILE]`: the traffic each class gets on every link, now.

Exit codes as `ibqos status`: 0 nothing found, 1 findings (a class squeezed below its share,
ports without per-SL counters), 2 unusable input.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
from ibqos import osmconf, osmlog
from ibqos.docfile import write_atomic
from ibqos.errors import InputError, VerificationFailed
from ibqos.fabric.dla_record import read_record, record_dir
from ibqos.fabric.live import sample_live
from ibqos.health import engine_of
from ibqos.monitor.counters import Sample
from ibqos.monitor.export import MonitorCollector, registry_for
from ibqos.monitor.export import write_config as write
from ibqos.monitor.judge import judge
from ibqos.monitor.view import render
from ibqos.plan import load_plan
from ibqos.term import console
from prometheus_client import start_http_server, write_to_textfile
from rich.live import Live

from ._target import sim_env
from .status import _applied


def _plan(plan_path: Path | None, opensm_conf: Path | None, say):
    if plan_path is not None:
        return load_plan(plan_path), plan_path
    if opensm_conf is None:
        raise InputError("give --plan PLAN or --opensm-conf PATH (its applied plan)", field="--plan")

    plan, plan_path, _, _ = _applied(opensm_conf, None, None, say)
    if plan is None:
        raise InputError(f"{opensm_conf}: no plan applied there (ibqos apply); give --plan", field="--opensm-conf")
    return plan, plan_path


def _engine(opensm_conf: Path | None, osm_log: Path | None) -> str | None:
    """The routing engine in force, as `ibqos status` names it: OpenSM's log, else dla's record."""

    record = None
    if opensm_conf is not None:
        try:
            opts = osmconf.parse(opensm_conf.read_text())
        except OSError as e:
            raise InputError(e.strerror or "cannot read", file=opensm_conf) from e
        record = read_record(record_dir(opts, None))
    return engine_of(osmlog.parse(osm_log) if osm_log is not None else [], record)


def _listen(addr: str) -> tuple[str, int]:
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(f"--listen {addr!r}: give ADDR:PORT, e.g. 127.0.0.1:9687", field="--listen")
    return host.strip("[]") or "0.0.0.0", int(port)


@click.command()
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False, path_type=Path), help="The plan to judge against.")
@click.option(
    "--opensm-conf",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Judge against the plan applied there (ibqos.d/current/plan.json).",
)
@click.option(
    "--interval", type=click.FloatRange(0.1, 3600), default=10.0, show_default=True, help="Seconds between samples."
)
@click.option("--once", is_flag=True, help="One interval (or, with --state, since the saved sample), then exit.")
@click.option("--count", type=click.IntRange(1), help="Stop after this many intervals.")
@click.option("--json", "as_json", is_flag=True, help="The judged links as JSON on stdout.")
@click.option("--listen", metavar="ADDR:PORT", help="Serve the Prometheus exposition here.")
@click.option(
    "--textfile",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the metrics for node_exporter's textfile collector.",
)
@click.option(
    "--state",
    type=click.Path(dir_okay=False, path_type=Path),
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
    "--saturation",
    type=click.FloatRange(0, 1),
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
    "--write-config",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write the Prometheus alerting rules and the Grafana dashboard for these metrics here, and exit.",
)
def monitor(
    plan_path,
    opensm_conf,
    interval,
    once,
    count,
    as_json,
    listen,
    textfile,
    state,
    rate,
    saturation,
    sim_socket,
    osm_log,
    write_config,
):
    """Sample every port's per-SL and per-VL counters over the PMA and judge each class's share
    of every link against the plan: exit 1 with one line per finding."""

    say = (lambda line: None) if as_json else click.echo
    if write_config is not None:
        for path in write(write_config, saturation):
            say(f"wrote {path}")
        return
    plan, plan_path = _plan(plan_path, opensm_conf, say)
    addr = _listen(listen) if listen else None
    env = sim_env(sim_socket)
    collector = MonitorCollector()
    registry = registry_for(collector)
    if addr:
        start_http_server(addr[1], addr=addr[0], registry=registry)
        say(f"metrics: http://{addr[0]}:{addr[1]}/metrics")

    def sample():
        fabric, text = sample_live(env, rate=rate)
        return fabric, Sample.from_json(text, "ibqos-readback")

    prev = None
    if state is not None and state.is_file():
        prev = Sample.from_json(state.read_text(), str(state))
    if prev is None:
        _, prev = sample()
        time.sleep(interval)
    rounds = 1 if once else count
    done, judged = 0, None
    live = None
    if not once and not as_json:
        live = Live(auto_refresh=False)
        live.start()
    try:
        while True:
            fabric, cur = sample()
            judged = judge(plan, fabric, prev, cur, saturation)
            collector.update(judged, _engine(opensm_conf, osm_log))
            if state is not None:
                write_atomic(state, cur.to_json())
            if textfile is not None:
                write_to_textfile(str(textfile), registry)
            if live is not None:
                live.update(render(judged, plan), refresh=True)
            done += 1
            prev = cur
            if rounds is not None and done >= rounds:
                break
            time.sleep(interval)
    finally:
        if live is not None:
            live.stop()
    assert judged is not None
    if as_json:
        doc = {
            "schema": "ibqos.monitor/1",
            "ok": not judged.findings,
            "plan": str(plan_path) if plan_path else None,
            "classes": [c.name for c in plan.classes],
            "interval_s": round(judged.interval_s, 6),
            "engine": collector.engine,
            "links": [link.to_json() for link in judged.links],
            "findings": [f.to_json() for f in judged.findings],
        }
        click.echo(json.dumps(doc, indent=1))
    elif live is None:
        console().print(render(judged, plan))
    if judged.findings:
        raise VerificationFailed("\n".join(f.message for f in judged.findings))
