"""Measured bandwidth shares per SL against the predicted (and simulated) shares.

Seed 002 section 5.3: the metric is each SL's percentage of the total link bandwidth,
phi_i = bw_i / sum(bw), compared as a difference in percentage points. The bandwidth of a
flow is what its receiver (the server) reports: the method measures the switch port facing
the receiving node. A class's share is the sum over its SLs; the verdict is per class,
which for the seed's one-SL-per-class set-ups is per SL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ibqos.docfile import read_json
from ibqos.errors import InputError

from .perftest_output import Bandwidth, Latency, parse_file
from .planinput import load_plan
from .results import FlowResult, Results


@dataclass
class SLMeasure:
    sl: int
    class_name: str
    bw_gbps: float | None = None
    share: float | None = None  # percent of the total measured
    lat_idle: Latency | None = None
    lat_loaded: Latency | None = None
    problems: list[str] = field(default_factory=list)


@dataclass
class ClassRow:
    name: str
    sls: list[int]
    priority: str
    predicted: float | None
    simulated: float | None
    measured: float | None
    diff_predicted: float | None = None  # measured - predicted, pp
    diff_simulated: float | None = None
    passed: bool | None = None  # None: nothing to compare with

    @property
    def label(self) -> str:
        return f"SL {','.join(map(str, self.sls))} ({self.name})"


@dataclass
class Report:
    results_dir: str
    prediction_source: str | None
    simulated_source: str | None
    tolerance: float
    rate: str
    rate_gbps: float | None
    bw_unit: str
    total_gbps: float | None
    per_sl: list[SLMeasure]
    classes: list[ClassRow]
    failures: list[str]
    notes: list[str] = field(default_factory=list)  # where a flag overrides the plan

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def compared(self) -> bool:
        return any(c.passed is not None for c in self.classes)

    @property
    def verdict(self) -> str:
        if self.failures:
            return "FAIL: " + "; ".join(self.failures)
        if not self.compared:
            return "measured only: no prediction to compare with"
        return f"PASS: every class within {self.tolerance:g} pp of its prediction" + (
            " and simulation" if self.simulated_source else ""
        )


def build_report(
    results_dir: str | Path,
    *,
    prediction: str | Path | None = None,
    simulated: str | Path | None = None,
    tolerance: float | None = None,
) -> Report:
    """tolerance None: the plan's (the --prediction plan's, else the run plan's copy), as the
    dry run judges with it."""
    results_dir = Path(results_dir)
    res = Results.load(results_dir)
    base = results_dir if results_dir.is_dir() else results_dir.parent
    run = res.runplan
    planned = load_plan(prediction).share_tolerance_pp if prediction else run.share_tolerance_pp
    notes = []
    if tolerance is None:
        tolerance = planned
    elif tolerance != planned:  # one set of defaults: the plan's, unless a flag overrides and says so
        notes.append(f"note: --tolerance {tolerance:g} overrides the plan's {planned:g} pp")
    per_sl = _measure(res, base)
    # A share is of the total of every SL: with one measurement missing the others' shares
    # would be of a partial total and judged wrongly, so none is judged.
    complete = all(m.bw_gbps is not None for m in per_sl)
    total = sum(m.bw_gbps for m in per_sl if m.bw_gbps is not None)
    for m in per_sl:
        if complete and total > 0 and m.bw_gbps is not None:
            m.share = 100.0 * m.bw_gbps / total

    predicted = _predictions(run, prediction)
    sim = _simulated(simulated, run) if simulated else {}
    failures = [
        f"SL {m.sl} ({m.class_name}): no bandwidth measurement: {m.problems[0]}" for m in per_sl if m.bw_gbps is None
    ]
    rows = []
    for c in run.classes:
        ms = [m for m in per_sl if m.sl in c.sls]
        shares = [m.share for m in ms if m.share is not None]
        measured = sum(shares) if ms and len(shares) == len(ms) else None
        row = ClassRow(c.name, list(c.sls), c.priority, predicted.get(c.name), sim.get(c.name), measured)
        checks = []
        if measured is not None and row.predicted is not None:
            row.diff_predicted = measured - row.predicted
            checks.append(("predicted", row.predicted, row.diff_predicted))
        if measured is not None and row.simulated is not None:
            row.diff_simulated = measured - row.simulated
            checks.append(("simulated", row.simulated, row.diff_simulated))
        if checks:
            bad = [(what, ref, d) for what, ref, d in checks if abs(d) > tolerance]
            row.passed = not bad
            failures += [
                f"{row.label}: measured {measured:.2f} % vs {what} {ref:.2f} % "
                f"({d:+.2f} pp, tolerance {tolerance:g} pp)"
                for what, ref, d in bad
            ]
        rows.append(row)
    return Report(
        results_dir=str(results_dir),
        tolerance=tolerance,
        prediction_source=str(prediction)
        if prediction
        else (run.plan_path if any(v is not None for v in predicted.values()) else None),
        simulated_source=str(simulated) if simulated else None,
        rate=run.rate,
        rate_gbps=run.rate_gbps,
        bw_unit=run.bw_unit,
        total_gbps=total if total > 0 else None,
        per_sl=per_sl,
        classes=rows,
        failures=failures,
        notes=notes,
    )


def _measure(res: Results, base: Path) -> list[SLMeasure]:
    unit = res.runplan.bw_unit
    by_key = {(f.phase, f.id): f for f in res.flows}
    out = []
    for c in res.runplan.classes:
        for sl in c.sls:
            m = SLMeasure(sl, c.name)
            bw = _result(by_key.get(("bw", f"bw-sl{sl}")), base, unit, ("server", "client"), m)
            if isinstance(bw, Bandwidth):
                m.bw_gbps = bw.gbps
            m.lat_idle = _latency(by_key.get((f"lat-idle-sl{sl}", f"lat-idle-sl{sl}")), base, m)
            m.lat_loaded = _latency(by_key.get((f"lat-loaded-sl{sl}", f"lat-loaded-sl{sl}")), base, m)
            out.append(m)
    return out


def _latency(flow: FlowResult | None, base: Path, m: SLMeasure) -> Latency | None:
    if flow is None:
        return None
    r = _result(flow, base, "MB/sec", ("client", "server"), m)
    return r if isinstance(r, Latency) else None


def _result(flow: FlowResult | None, base: Path, unit: str, roles: tuple[str, ...], m: SLMeasure):
    """The first side whose output parses; records why when none does."""
    if flow is None:
        m.problems.append("flow missing from the results")
        return None
    why = []
    for role in roles:
        p = getattr(flow, role)
        try:
            return parse_file(base / p.stdout, json_unit=unit)
        except InputError as e:
            why.append(p.error or str(e))
    m.problems.append(f"{flow.id}: {flow.error or why[0]}")
    return None


def _predictions(run, prediction: str | Path | None) -> dict[str, float | None]:
    if prediction is None:
        return {c.name: c.predicted_share for c in run.classes}
    plan = load_plan(prediction)
    known = {c.name: c for c in plan.classes}
    for c in run.classes:
        if c.name not in known:
            raise InputError(f"class {c.name!r} of the run is not in this plan", file=prediction, field="classes")
        if tuple(c.sls) != known[c.name].sls:
            raise InputError(
                f"class {c.name!r} has SLs {list(known[c.name].sls)} here but {c.sls} in the run",
                file=prediction,
                field="classes",
            )
    return {c.name: known[c.name].predicted_share for c in run.classes}


def _simulated(path: str | Path, run) -> dict[str, float]:
    """Shares (percent) from a simulator run of the same two-node method. Accepted:
    the SimResult JSON of ibqos_sim (per_sl / per_class lists of rows with "share_pct"), or
    a plain {"per_sl": {"0": 45.7, ...}} or {"per_class": {"storage": 27.4, ...}}."""
    path = Path(path)
    doc = read_json(path)
    key = next((k for k in ("per_sl", "per_class") if isinstance(doc, dict) and k in doc), None)
    if key is None:
        raise InputError('expected "per_sl" or "per_class" shares', file=path)
    shares = _share_map(doc[key], "sl" if key == "per_sl" else "name", path, key)
    out: dict[str, float] = {}
    for c in run.classes:
        if key == "per_class":
            if c.name not in shares:
                raise InputError(f"no share for class {c.name!r}", file=path, field=key)
            out[c.name] = shares[c.name]
            continue
        missing = [sl for sl in c.sls if str(sl) not in shares]
        if missing:
            raise InputError(f"no share for SL {missing[0]}", file=path, field=key)
        out[c.name] = sum(shares[str(sl)] for sl in c.sls)
    return out


def _share_map(raw, id_key: str, path: Path, field: str) -> dict[str, float]:
    """{id: share} from a mapping or from SimResult rows [{id_key: ..., "share_pct": ...}]."""
    try:
        if isinstance(raw, dict):
            out = {str(k): float(v) for k, v in raw.items()}
        elif isinstance(raw, list):
            out = {str(r[id_key]): float(r["share_pct"]) for r in raw}
        else:
            raise InputError("shares must be a mapping or a list of rows", file=path, field=field)
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"unreadable share row ({e})", file=path, field=field) from e
    bad = next((k for k, v in out.items() if not 0 <= v <= 100), None)  # NaN fails too
    if bad is not None:
        raise InputError(f"share {out[bad]} of {bad!r} is not a percentage", file=path, field=field)
    return out
