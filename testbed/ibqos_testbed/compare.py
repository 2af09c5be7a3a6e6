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
from ibqos.inputfile import read_bytes

from .perftest_output import Bandwidth, Latency, Result, failure_line, parse_file
from .planinput import load_plan
from .results import FILE, FlowResult, ProcessResult, Results

# Shares and predictions are compared in percentage points printed to 2 decimals: a
# difference equal to the tolerance passes, which float subtraction misses by ~1e-15.
_EPS_PP = 1e-9


@dataclass
class SLMeasure:
    sl: int
    class_name: str
    bw_gbps: float | None = None
    share: float | None = None  # percent of the total measured
    lat_idle: Latency | None = None
    lat_loaded: Latency | None = None
    problems: list[str] = field(default_factory=list)  # a measurement taken from the other side, and why


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
    results_file = results_dir / FILE if results_dir.is_dir() else results_dir
    run = res.runplan
    planned = load_plan(prediction).share_tolerance_pp if prediction else run.share_tolerance_pp
    notes = []
    if tolerance is None:
        tolerance = planned
    elif tolerance != planned:  # one set of defaults: the plan's, unless a flag overrides and says so
        notes.append(f"note: --tolerance {tolerance:g} overrides the plan's {planned:g} pp")
    per_sl, failures = _measure(res, base, _recorded_flows(res, results_file), notes)
    # A share is of the total of every SL: with one measurement missing the others' shares
    # would be of a partial total and judged wrongly, so none is judged.
    complete = all(m.bw_gbps is not None for m in per_sl)
    total = sum(m.bw_gbps for m in per_sl if m.bw_gbps is not None)
    for m in per_sl:
        if complete and total > 0 and m.bw_gbps is not None:
            m.share = 100.0 * m.bw_gbps / total

    predicted = _predictions(run, prediction)
    sim = _simulated(simulated, run) if simulated else {}
    if complete and total == 0:
        failures.append("no SL moved any data: every bandwidth flow measured 0 (is the plan applied? ibqos status)")
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
            bad = [(what, ref, d) for what, ref, d in checks if abs(d) > tolerance + _EPS_PP]
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


def _measure(
    res: Results, base: Path, flows: dict[tuple[str, str], FlowResult], notes: list[str]
) -> tuple[list[SLMeasure], list[str]]:
    """Each SL's bandwidth (its receiver's, else its sender's) and latencies; and what the
    recordings say against the plan (perftest ran at another MTU)."""
    run = res.runplan
    s = run.settings
    out = []
    mtus: dict[int, list[str]] = {}
    for c in run.classes:
        for sl in c.sls:
            m = SLMeasure(sl, c.name)
            bw_flow = flows[("bw", f"bw-sl{sl}")]
            bw, path = _result(bw_flow, base, run.bw_unit, s.size, ("server", "client"), m)
            assert isinstance(bw, Bandwidth)
            if run.rate_gbps is not None and bw.gbps > run.rate_gbps:
                raise InputError(
                    f"{bw.bw_average:g} {bw.unit} is {bw.gbps:.1f} Gb/s, more than the {run.rate} link carries "
                    f"({run.rate_gbps:g} Gb/s): not this link's measurement, or not in {bw.unit}",
                    file=path,
                    line=bw.line,
                    field=bw_flow.id,
                )
            m.bw_gbps = bw.gbps
            results: list[tuple[str, Result]] = [(bw_flow.id, bw)]
            # the run plan has no loaded phase when it has one SL
            idle, loaded = (flows.get((f"lat-{load}-sl{sl}",) * 2) for load in ("idle", "loaded"))
            if idle:
                m.lat_idle = _latency(idle, base, s.lat_size, m, results)
            if loaded:
                m.lat_loaded = _latency(loaded, base, s.lat_size, m, results)
            for fid, r in results:
                if r.mtu is not None and r.mtu != run.mtu:
                    mtus.setdefault(r.mtu, []).append(fid)
            notes += [f"note: {problem}" for problem in m.problems]
            out.append(m)
    failures = [
        f"perftest ran at MTU {mtu}, the plan's is {run.mtu} ({', '.join(ids[:3])}"
        f"{', ...' if len(ids) > 3 else ''}): a port's active MTU is below the plan's (ibqos status)"
        for mtu, ids in mtus.items()
    ]
    return out, failures


def _latency(flow: FlowResult, base: Path, size: int, m: SLMeasure, results: list[tuple[str, Result]]) -> Latency:
    lat, _ = _result(flow, base, "MB/sec", size, ("client", "server"), m)
    assert isinstance(lat, Latency)
    results.append((flow.id, lat))
    return lat


def _recorded_flows(res: Results, path: Path) -> dict[tuple[str, str], FlowResult]:
    """Every flow of the run plan, recorded once and as planned. A missing, doubled or
    foreign recording leaves an SL's share unknowable (of which run? of what total?), so it
    is refused, never picked from."""
    planned = {(ph.name, f.id): f for ph, f in res.runplan.flows()}
    lines = _flow_lines(path, len(res.flows))
    got: dict[tuple[str, str], FlowResult] = {}
    for i, fr in enumerate(res.flows):
        key = (fr.phase, fr.id)
        plan = planned.get(key)
        problem = None
        if plan is None:
            problem = f"flow {fr.id} (phase {fr.phase}, SL {fr.sl}) is not in the run plan"
        elif (fr.kind, fr.sl) != (plan.kind, plan.sl):
            problem = f"flow {fr.id} is {fr.kind} on SL {fr.sl}; the run plan has {plan.kind} on SL {plan.sl}"
        elif key in got:
            problem = f"flow {fr.id} (phase {fr.phase}, SL {fr.sl}) is recorded twice: which run to judge is unknown"
        if problem:
            raise InputError(problem, file=path, line=lines[i] if lines else None, field=f"flows[{i}]")
        got[key] = fr
    missing = [k for k in planned if k not in got]
    if missing:
        phase, fid = missing[0]
        raise InputError(
            f"no recording of flow {fid} (phase {phase}, SL {planned[missing[0]].sl}); "
            f"{len(missing)} of the run plan's {len(planned)} flows missing"
            + (" (the run was interrupted)" if res.interrupted else ""),
            file=path,
            field="flows",
        )
    return got


def _flow_lines(path: Path, count: int) -> list[int]:
    """The line where each flow's object starts in results.json (Results.save writes one key
    a line), or [] when the file is laid out otherwise."""
    try:
        text = read_bytes(path).decode("utf-8", errors="replace")
    except (OSError, InputError):
        return []
    lines = [n for n, ln in enumerate(text.splitlines(), 1) if ln.lstrip().startswith('"phase":')]
    return [n - 1 for n in lines] if len(lines) == count else []


def _result(
    flow: FlowResult,
    base: Path,
    unit: str,
    size: int,
    roles: tuple[str, str],
    m: SLMeasure,
) -> tuple[Result, Path]:
    """The first side's result that parses (in m.problems when it is not the first side's);
    an InputError naming the file when neither does."""
    why: list[tuple[ProcessResult, InputError]] = []
    for role in roles:
        p: ProcessResult = getattr(flow, role)
        path = base / p.stdout
        try:
            r = parse_file(path, json_unit=unit, size=size, kind=flow.kind)
        except InputError as e:
            why.append((p, e))
            continue
        if why:
            m.problems.append(
                f"{flow.id}: the {why[0][0].role}'s output is unusable ({why[0][1]}); the {role}'s is used"
            )
        return r, path
    raise _unusable(flow, base, why)


def _unusable(flow: FlowResult, base: Path, why: list[tuple[ProcessResult, InputError]]) -> InputError:
    """Why a flow has no result: where perftest said it failed (the runner's diagnosis, at
    its line of stderr), else why its output does not parse."""
    for p, _ in why:
        if p.error:
            err = base / p.stderr
            try:
                said = failure_line(read_bytes(err, limit=1 << 20).decode("utf-8", errors="replace"))
            except (OSError, InputError):
                said = None
            return InputError(p.error, file=err, line=said[0] if said else None, field=flow.id)
    e = why[0][1]
    return InputError(e.detail, file=e.file, line=e.line, field=flow.id)


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
