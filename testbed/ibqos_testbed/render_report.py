"""The report as a rich table or as JSON (schema ibqos.testbed-report/1)."""

from __future__ import annotations

import dataclasses
import json

from ibqos import term
from rich.console import Console
from rich.table import Table

from .compare import Report

SCHEMA = "ibqos.testbed-report/1"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _pp(v: float | None) -> str:
    return "-" if v is None else f"{v:+.2f}"


def _lat(sls, attr: str) -> tuple[str, str]:
    """Average and 99th percentile in µs; the worst SL of a class with several."""
    lats = [getattr(m, attr) for m in sls if getattr(m, attr) is not None]
    if not lats:
        return "-", "-"
    worst = max(lats, key=lambda x: x.t_avg)
    return f"{worst.t_avg:.2f}", f"{worst.p99:.2f}"


def print_table(rep: Report, console: Console | None = None) -> None:
    """Shares and verdicts, then latency; a failure's verdict is the CLI's error line."""
    console = console or term.console(pipe_width=None)
    term.print_table(console, _share_table(rep), keys=2)  # SL and class
    term.print_table(console, _latency_table(rep), keys=2)
    if rep.passed:
        console.print(rep.verdict, style="green" if rep.compared else "yellow", markup=False)


def _share_table(rep: Report) -> Table:
    sim = rep.simulated_source is not None
    t = Table(title=f"Bandwidth share per SL (tolerance {rep.tolerance:g} pp)", caption=_caption(rep))
    t.add_column("SL", justify="right")
    t.add_column("class", overflow="fold")
    t.add_column("prio")
    t.add_column("pred %", justify="right")
    if sim:
        t.add_column("sim %", justify="right")
    t.add_column("meas %", justify="right")
    t.add_column("Δ pp", justify="right")
    if sim:
        t.add_column("Δ sim", justify="right")
    t.add_column("Gb/s", justify="right")
    t.add_column("verdict", no_wrap=True)
    for c in rep.classes:
        ms = [m for m in rep.per_sl if m.sl in c.sls]
        gbps = [m.bw_gbps for m in ms]
        verdict = {True: "[green]pass[/]", False: "[bold red]FAIL[/]", None: "-"}[c.passed]
        if None in gbps:
            verdict = "[bold red]no data[/]"
        row = [",".join(map(str, c.sls)), c.name, c.priority, _pct(c.predicted)]
        row += [_pct(c.simulated)] if sim else []
        row += [_pct(c.measured), _pp(c.diff_predicted)]
        row += [_pp(c.diff_simulated)] if sim else []
        known = [g for g in gbps if g is not None]
        row += ["-" if len(known) < len(gbps) else f"{sum(known):.2f}", verdict]
        t.add_row(*row)
    return t


def _latency_table(rep: Report) -> Table:
    t = Table(title="Message latency per SL, ib_send_lat (µs)")
    t.add_column("SL", justify="right")
    t.add_column("class", overflow="fold")
    for head in ("idle avg", "idle p99", "loaded avg", "loaded p99"):
        t.add_column(head, justify="right")
    for c in rep.classes:
        ms = [m for m in rep.per_sl if m.sl in c.sls]
        t.add_row(",".join(map(str, c.sls)), c.name, *_lat(ms, "lat_idle"), *_lat(ms, "lat_loaded"))
    return t


def _caption(rep: Report) -> str:
    parts = []
    if rep.total_gbps is not None:
        link = f" of {rep.rate}" + (f" {rep.rate_gbps:g} Gb/s" if rep.rate_gbps else "")
        parts.append(f"total measured {rep.total_gbps:.2f} Gb/s{link}")
    if rep.prediction_source:
        parts.append(f"predicted: {rep.prediction_source}")
    if rep.simulated_source:
        parts.append(f"simulated: {rep.simulated_source}")
    return "; ".join(parts)


def to_dict(rep: Report) -> dict:
    def lat(x):  # the row's line in its file is for error messages, not the report
        return None if x is None else {k: v for k, v in dataclasses.asdict(x).items() if k != "line"}

    return {
        "schema": SCHEMA,
        "results": rep.results_dir,
        "prediction": rep.prediction_source,
        "simulated": rep.simulated_source,
        "tolerance_pp": rep.tolerance,
        "rate": rep.rate,
        "rate_gbps": rep.rate_gbps,
        "total_gbps": rep.total_gbps,
        "passed": rep.passed,
        "verdict": rep.verdict,
        "failures": rep.failures,
        "per_class": [dataclasses.asdict(c) for c in rep.classes],
        "per_sl": [
            {
                "sl": m.sl,
                "class": m.class_name,
                "bw_gbps": m.bw_gbps,
                "share": m.share,
                "lat_idle_us": lat(m.lat_idle),
                "lat_loaded_us": lat(m.lat_loaded),
                "problems": m.problems,
            }
            for m in rep.per_sl
        ],
    }


def to_json(rep: Report) -> str:
    return json.dumps(to_dict(rep), indent=2)
