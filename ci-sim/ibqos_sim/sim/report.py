"""SimResult -> rich tables and JSON files."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from ibqos.docfile import made_dir, write_atomic
from ibqos.term import literal, print_table
from rich.console import Console
from rich.table import Table

from .result import SimResult, Throughput

SCHEMA = "ibqos.sim/1"


def _fmt(v, digits=2) -> str:
    return "sat" if v is None else f"{v:.{digits}f}"


def throughput_table(title: str, rows: list[Throughput]) -> Table:
    t = Table(title=title, title_justify="left")
    for col in ("class", "SL", "offered %", "accepted %", "Gb/s", "share %", "lat mean µs", "p50", "p99", "max"):
        t.add_column(col, justify="left" if col == "class" else "right")
    for r in rows:
        t.add_row(
            r.name,
            str(r.sl),
            _fmt(r.offered_pct),
            _fmt(r.accepted_pct),
            _fmt(r.accepted_gbps),
            _fmt(r.share_pct),
            _fmt(r.net_latency.mean_us, 3),
            _fmt(r.net_latency.p50_us, 3),
            _fmt(r.net_latency.p99_us, 3),
            _fmt(r.net_latency.max_us, 3),
        )
    return t


def print_result(res: SimResult, console: Console | None = None) -> None:
    console = console or Console()
    c = res.counters
    head = (
        f"[bold]{res.pattern}[/] load {res.load:.2f}: {res.status}, accepted "
        f"{res.accepted_pct:.2f}% of the link (offered {_fmt(res.offered_pct)}%), "
        f"{c['packet_hops']:,} packet-hops in {c['cpu_s']:.2f} s CPU"
    )
    console.print(head)
    print_table(console, throughput_table("per class (latency: injection to delivery)", res.per_class))
    if Counter(s.sl for s in res.per_sl) != Counter(k.sl for k in res.per_class):  # classes share SLs
        print_table(console, throughput_table("per SL", res.per_sl))
    t = Table(title="per VL utilisation, all links", title_justify="left")
    t.add_column("VL", justify="right")
    t.add_column("mean %", justify="right")
    t.add_column("max %", justify="right")
    for vl, u in sorted(res.per_vl.items()):
        t.add_row(str(vl), f"{u['mean_util_pct']:.2f}", f"{u['max_util_pct']:.2f}")
    print_table(console, t)
    if res.deadlock:
        d = res.deadlock
        console.print(
            literal(
                (res.status, "bold red"),
                f" at {d['at_us']:.1f} µs (last move {d['last_move_us']:.1f} µs): "
                + ("cycle of " if res.status == "deadlock" else "blocked buffers ")
                + f"{len(d['cycle'])}: "
                + " -> ".join(d["cycle"] + d["cycle"][:1]),
            )
        )
    for n in res.notes:
        console.print(f"note: {n}", markup=False, highlight=False)


def print_sweep(results: list[SimResult], console: Console | None = None) -> None:
    console = console or Console()
    t = Table(title="load sweep", title_justify="left")
    for col in ("load", "status", "accepted %"):
        t.add_column(col, justify="right")
    names = [c.name for c in results[0].per_class] if results else []
    for n in names:
        t.add_column(f"{n} %", justify="right")
        t.add_column(f"{n} p99 µs", justify="right")
    for r in results:
        row = [f"{r.load:.2f}", r.status, f"{r.accepted_pct:.2f}"]
        by = r.class_by_name
        for n in names:
            row += [f"{by[n].accepted_pct:.2f}", f"{by[n].net_latency.p99_us:.3f}"]
        t.add_row(*row)
    print_table(console, t)


def write_json(path: str | Path, results: list[SimResult], meta: dict) -> Path:
    """Atomic: a temp file in the target directory renamed over `path`."""
    path = Path(path)
    doc = {"schema": SCHEMA, **meta, "results": [r.to_json() for r in results]}
    with made_dir(path.parent):
        write_atomic(path, json.dumps(doc, indent=1) + "\n")
    return path
