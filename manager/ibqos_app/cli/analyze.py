"""`ibqos analyze`: per-VL (and per-class) shares, distances and waits of VLArb tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from ibqos.arbiter import ArbTable
from ibqos.arbiter.algorithm1 import analyze_algorithm1
from ibqos.arbiter.exact import NoPeriodError, analyze_exact
from ibqos.arbiter.rates import rate_gbps
from ibqos.errors import InputError
from ibqos.plan import load_plan
from ibqos.roles import ROLES
from ibqos.term import console, literal, print_table
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

if TYPE_CHECKING:
    from ibqos.arbiter.result import ArbAnalysis
    from ibqos.plan import Plan, PlanClass

T = TypeVar("T", int, float)
# (label, table, the plan's classes or None): one analysis each
Job = tuple[str, "ArbTable", "list[PlanClass] | None"]

# Algorithm 1 keeps every delivery of every cycle, so time and memory grow with the runs:
# 100000 took 84 s and 2.2 GB for the campaign in issue 13; 10000 of a 4-entry table take
# 1 s here, and far more cycles than any share needs to settle.
MAX_RUNS = 10000
PROGRESS_FROM = 1000  # runs; shorter analyses finish before a bar would help


@click.command()
@click.argument("plan_path", metavar="[PLAN]", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--high", help="High table, VL:weight in table order, e.g. 0:9,1:10,0:8,2:7.")
@click.option("--low", help="Low table, VL:weight in table order.")
@click.option(
    "--limit",
    type=click.IntRange(0, 255),
    default=1,
    show_default=True,
    help="VLHighLimit in 4096-byte units (255: none, 0: one packet).",
)
@click.option(
    "--mode",
    type=click.Choice(["byte", "packet"]),
    help="Accounting mode (docs/arbiter.md); default byte, or the plan's.",
)
@click.option(
    "--packet",
    "packet_bytes",
    type=click.IntRange(1, 1 << 20),
    help="Packet size in bytes (default 4096, or the plan's MTU).",
)
@click.option("--rate", help="Link rate: EDR, HDR, ... or Gb/s (default EDR, or the plan's).")
@click.option("--engine", type=click.Choice(["exact", "algorithm1"]), default="exact", show_default=True)
@click.option(
    "--runs",
    type=int,
    default=30,
    show_default=True,
    help=f"High-table cycles for --engine algorithm1 (1 to {MAX_RUNS}).",
)
@click.option("--role", help="Only this port role of the plan (ca, sw0, terminal, local, global).")
@click.option(
    "--switch-hops",
    type=click.IntRange(0, 64),
    help="End-to-end bound of a PLAN on a route with this many switch-to-switch links "
    "(default: the plan's, 3 under dla).",
)
@click.option("--json", "as_json", is_flag=True, help="JSON instead of tables.")
def analyze(
    plan_path: Path | None,
    high: str | None,
    low: str | None,
    limit: int,
    mode: str | None,
    packet_bytes: int | None,
    rate: str | float | None,
    engine: str,
    runs: int,
    role: str | None,
    switch_hops: int | None,
    as_json: bool,
) -> None:
    """Analyze the tables of PLAN, or the table set given with --high/--low/--limit."""

    if not 1 <= runs <= MAX_RUNS:
        raise InputError(
            f"{runs} is outside 1..{MAX_RUNS}: Algorithm 1 keeps every delivery, so "
            "its time and memory grow with the runs",
            field="--runs",
        )
    jobs: list[Job] = []
    plan = None
    if plan_path is not None:
        if high is not None or low is not None:
            raise InputError("give either a PLAN or --high/--low, not both", field="--high")

        plan = load_plan(plan_path)
        mode = mode or plan.accounting
        packet_bytes = packet_bytes or plan.fabric.mtu
        rate = rate or plan.fabric.rate_gbps
        roles = [role] if role else list(ROLES)
        for r in roles:
            if r not in ROLES:
                raise InputError(f"unknown role {r!r} (one of {', '.join(ROLES)})", field="--role")
            jobs.append((r, plan.vlarb.role(r), plan.classes))
    else:
        if high is None and low is None:
            raise InputError("give a PLAN or at least one of --high/--low", field="--high")
        try:
            table = ArbTable(
                ArbTable.parse_entries(high or "", "--high"), ArbTable.parse_entries(low or "", "--low"), limit
            )
        except ValueError as e:
            raise InputError(str(e)) from e
        if not any(w for _, w in table.high + table.low):
            # an empty table set sends nothing: there is nothing to analyse, and saying
            # "0 %" with exit 0 would read as an answer
            raise InputError(
                "the tables have no entry with a weight above 0: give VL:weight "
                "entries, e.g. --high 0:9,1:10 --low 2:4",
                field="--high" if high is not None else "--low",
            )
        jobs.append(("tables", table, None))
    if switch_hops is not None and (plan_path is None or role):
        raise InputError("--switch-hops needs a PLAN and every role (no --role)", field="--switch-hops")
    mode = mode or "byte"
    packet_bytes = packet_bytes or 4096
    try:
        gbps = rate_gbps(rate if rate is not None else "EDR")
    except ValueError as e:
        raise InputError(str(e), field="--rate") from e

    out: dict[str, dict[str, Any]] = {}  # label -> its analysis as JSON
    for label, table, classes in jobs:
        if engine == "exact":
            try:
                a = analyze_exact(table, packet_bytes, mode, gbps)
            except NoPeriodError as e:
                raise InputError(f"{label}: {e}; use --engine algorithm1 --runs N for this table") from e
        else:
            a = _algorithm1_with_progress(label, table, packet_bytes, mode, gbps, runs)
        doc = a.to_dict()
        if classes:
            doc["per_class"] = _per_class(a, classes)
        out[label] = doc
    e2e = _end_to_end(plan, out, switch_hops) if plan is not None and not role else None
    if as_json:
        click.echo(json.dumps((out | ({"end_to_end": e2e} if e2e else {})) if plan_path else out["tables"], indent=1))
        return
    _print(out, jobs)
    if e2e:
        _print_e2e(e2e)


def _algorithm1_with_progress(
    label: str, table: ArbTable, packet_bytes: int, mode: str, gbps: float, runs: int
) -> ArbAnalysis:
    """Algorithm 1, with a progress bar on stderr for long runs (stdout stays clean for --json)."""

    if runs < PROGRESS_FROM:
        return analyze_algorithm1(table, packet_bytes, mode, gbps, runs)

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(f"{label}: Algorithm 1 cycles", total=runs)
        step = max(1, runs // 200)  # redraw at most ~200 times

        def tick(done: int, _: int) -> None:
            if done % step == 0 or done == runs:
                bar.update(task, completed=done)

        return analyze_algorithm1(table, packet_bytes, mode, gbps, runs, progress=tick)


def _known_max(xs: list[T | None]) -> T | None:
    """The largest, or None when one is unknown (unbounded)."""
    known = [x for x in xs if x is not None]
    return max(known) if known and len(known) == len(xs) else None


def _per_class(a: ArbAnalysis, classes: list[PlanClass]) -> dict[str, dict[str, float | None]]:
    res = {}
    for c in classes:
        stats = [a.per_vl[v] for v in c.vls if v in a.per_vl]
        if not stats:
            continue
        known = _known_max
        res[c.name] = {
            "share": sum(s.share for s in stats),
            "max_distance": known([s.max_distance for s in stats]),
            "worst_wait_bytes": known([s.worst_wait_bytes for s in stats]),
            "worst_wait_us": known([s.worst_wait_us for s in stats]),
        }
    return res


def _end_to_end(plan: Plan, out: dict[str, dict[str, Any]], switch_hops: int | None) -> dict[str, Any] | None:
    """Per class, the end-to-end bound from the waits just analysed (docs/policy.md)."""
    if switch_hops is None:
        switch_hops = plan.route_switch_hops
    if switch_hops is None:
        return None
    per_class = {}
    for c in plan.classes:

        def wait_us(r: str, n: str = c.name) -> float | None:
            w: float | None = out[r].get("per_class", {}).get(n, {}).get("worst_wait_us")
            return w

        e = plan.e2e_bound(wait_us, switch_hops)
        per_class[c.name] = e.to_dict() | {"max_e2e_latency_us": c.latency.max_e2e_latency_us}
    return {
        "switch_hops": switch_hops,
        "switch_latency_ns": plan.fabric.switch_latency_ns,
        "max_cable_m": plan.fabric.max_cable_m,
        "per_class": per_class,
    }


def _print_e2e(e2e: dict[str, Any]) -> None:
    first = next(iter(e2e["per_class"].values()))
    t = Table(
        title=literal(
            f"end to end per packet: route {' → '.join(first['ports'])} ({e2e['switch_hops']} switch hops), "
            f"{e2e['switch_latency_ns']:g} ns per switch, {e2e['max_cable_m']:g} m cables"
        ),
        caption="arbitration waits + serialization + wire + switches; assumes no queueing behind the "
        "class's own packets and no credit stalls",
    )
    for col in ("class", "waits µs", "serial. µs", "wire µs", "switch µs", "bound µs", "max µs"):
        t.add_column(col, justify="right")
    for name, d in e2e["per_class"].items():
        t.add_row(
            name,
            _f(d["wait_us"], 3),
            _f(d["serialization_us"], 3),
            _f(d["wire_us"], 3),
            _f(d["switch_us"], 3),
            _f(d["bound_us"], 3),
            "–" if d["max_e2e_latency_us"] is None else f"{d['max_e2e_latency_us']:g}",
        )
    Console().print(t)


def _print(out: dict[str, dict[str, Any]], jobs: list[Job]) -> None:
    con = console()
    for label, table, _ in jobs:
        doc = out[label]
        t = Table(
            title=f"{label}: {doc['engine']}, {doc['mode']} accounting, "
            f"{doc['packet_bytes']}-byte packets, {doc['rate_gbps']:g} Gb/s, "
            f"VLHighLimit {table.limit}"
        )
        for col in ("VL", "share %", "max dist", "mean dist", "worst wait B", "worst wait µs"):
            t.add_column(col, justify="right")
        for vl, s in doc["per_vl"].items():
            t.add_row(
                vl,
                f"{s['share']:.3f}",
                _f(s["max_distance"]),
                _f(s["mean_distance"], 2),
                _f(s["worst_wait_bytes"]),
                _f(s["worst_wait_us"], 3),
            )
        print_table(con, t)
        if "per_class" in doc:
            t = Table(title=f"{label}: per class")
            for col in ("class", "share %", "max dist", "worst wait µs"):
                t.add_column(col, justify="right")
            for name, s in doc["per_class"].items():
                t.add_row(name, f"{s['share']:.3f}", _f(s["max_distance"]), _f(s["worst_wait_us"], 3))
            print_table(con, t)
        for note in doc["notes"]:
            con.print(f"note: {note}")


def _f(x: float | None, digits: int | None = None) -> str:
    if x is None:
        return "∞"
    return f"{x:.{digits}f}" if digits is not None else str(x)
