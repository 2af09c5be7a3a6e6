"""Routing engines side by side on one fabric (seed 003 §5.2): real OpenSM routes it with each
engine (dla through the plugin), the state is read back live, with the SA's SL for every CA
pair where the engine sets one (lash, dfsssp), and the simulator replays uniform, 6-point 3D
stencil and hot-spot traffic on exactly that state. An engine OpenSM replaces by another
(updn on a dragonfly) is reported as such; a deadlock is reported as a deadlock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ibqos import osmlog
from ibqos.docfile import made_dir, write_figure
from ibqos.errors import InputError
from ibqos.extras import pyplot
from ibqos.fabric.dla_record import read_record
from ibqos.redline import needs_path_sls
from ibqos.verify import verify_fabric
from ibqos.verify.pathsl import from_fabric
from ibqos.verify.sa_paths import query_path_sls
from ibqos.vls import vlcap_code

from .harness import BUILTIN_ENGINES, PLUGIN_ENGINES, Harness, engine_chain
from .sim import TrafficSpec
from .sim.points import Point, run_points
from .sim.traffic import adversarial_groups

# Every data VL its own equal share, as a VL-agnostic simulator arbitrates (the paper's
# simulator has no QoS tables); the high table unused.
QOS_CONF = {
    "qos": "TRUE",
    "max_op_vls": vlcap_code(8),  # the VLCap code of 8 data VLs (VL0-7), not the count
    "qos_max_vls": 8,
    "qos_high_limit": 0,
    "qos_vlarb_high": "0:0",
    "qos_vlarb_low": ",".join(f"{v}:64" for v in range(8)),
}

# adversarial: every CA sends to the next group (sim/traffic.py), dragonflies and dragonflies+
PATTERNS = ("uniform", "stencil", "hotspot", "adversarial")
PATTERN_ALIASES = {"stencil3d": "stencil"}  # seed 003's name for the 6-point 3D stencil
# `file` routes from LFT dumps this command does not take; without them OpenSM builds
# minhop's tables and still names them "file", so it would be minhop under another name.
NOT_COMPARABLE = {"file": "needs LFT dump files (OpenSM would build minhop's tables and call them 'file')"}


def parse_engines(text: str) -> list[str]:
    """The --engines list, checked before any process starts."""
    names = engine_chain(text)
    if not names:
        raise InputError("no routing engine named", field="--engines")
    for name in names:
        if name in NOT_COMPARABLE:
            raise InputError(f"{name}: {NOT_COMPARABLE[name]}", field="--engines")
        if name not in BUILTIN_ENGINES + PLUGIN_ENGINES:
            known = [e for e in PLUGIN_ENGINES + BUILTIN_ENGINES if e not in NOT_COMPARABLE]
            raise InputError(f"unknown routing engine {name!r} (known: {', '.join(known)})", field="--engines")
    dup = sorted({e for e in names if names.count(e) > 1})
    if dup:
        raise InputError(f"{', '.join(dup)} named twice", field="--engines")
    return names


def parse_patterns(text: str) -> list[str]:
    names = [PATTERN_ALIASES.get(p.strip(), p.strip()) for p in text.split(",") if p.strip()]
    bad = [p for p in names if p not in PATTERNS]
    if bad or not names:
        raise InputError(
            f"{', '.join(map(repr, bad)) or 'none'}: patterns are {', '.join(PATTERNS)} (stencil3d = stencil)",
            field="--patterns",
        )
    if len(set(names)) != len(names):
        raise InputError("a pattern named twice", field="--patterns")
    return names


@dataclass
class EngineResult:
    engine: str
    routed_by: str | None
    sls_used: list[int] = field(default_factory=list)
    vls_used: list[int] = field(default_factory=list)
    credit_loop: bool | None = None
    skipped: str | None = None
    # pattern -> [(load, accepted %, status, per-SL delivered packets)]
    curves: dict[str, list[dict]] = field(default_factory=dict)

    def to_json(self) -> dict:
        return self.__dict__


def route_and_read(h, engine: str):
    """(fabric with path SLs where the engine sets them, engine OpenSM used)."""
    fabric, used, _ = route_read_explain(h, engine)
    return fabric, used


def route_read_explain(h, engine: str):
    """(fabric, engine OpenSM used, OpenSM's words when that is not `engine`). The per-pair
    SLs are the SA's answers, read in one process by the verifier's own reader."""
    sm = h.start_sm(
        engine="dla,minhop" if engine == "dla" else engine, plugin=engine == "dla", conf=QOS_CONF, log_flags=0x03
    )
    try:
        lines = sm.lines()
        used = osmlog.configured_engines(lines)
        fabric = h.read_back(save=False)
        if used and needs_path_sls(used[-1]):
            fabric.path_sls = dict(query_path_sls(fabric, h.env).by_lids)
    finally:
        sm.stop()
    used_last = used[-1] if used else None
    if used_last == engine:
        return fabric, used_last, ""

    return fabric, used_last, fallback_reason(lines, engine, read_record(sm.dumps))


def fallback_reason(lines, engine: str, record=None) -> str:
    """Why OpenSM did not route with `engine`: dla's reason from its record; OpenSM's own
    engines say it only in the log (their ERR lines and complaints, e.g. updn's 'no root
    nodes were found')."""
    if engine == "dla" and record is not None and record.refused:
        return f"dla refused the fabric ({record.engine.error}): {record.engine.reason}"
    return "; ".join(osmlog.engine_complaints(lines, engine))


# PLR0913: one parameter per compare-engines option
def compare(  # noqa: PLR0913
    netfile,
    engines,
    patterns,
    loads,
    params,
    tick: Callable[[], None] = lambda: None,
    run_dir=None,
    save_dir=None,
    run=None,
) -> list[EngineResult]:
    """Route and read back every engine in turn on one ibsim fabric (OpenSM is one at a time),
    then simulate every (engine, pattern, load) point with `run(fabrics, points, tick)`
    (sweeprun.runner: local cores or a Slurm array; default every local core). With
    `save_dir`, each routed engine's read-back model (with its per-pair SLs) is kept as
    save_dir/ENGINE/fabric.json, for `ibqos simulate` and `ibqos verify` afterwards."""
    out: list[EngineResult] = []
    fabrics = {}
    with Harness(netfile, run_dir=run_dir) as h:
        for engine in engines:
            fabric, used, why = route_read_explain(h, engine)
            if "adversarial" in patterns and not out:
                # the wiring's groups, the same for every engine: said before the next one routes
                # (FABRIC, the command's argument, may be a spec written to a temporary net file)
                adversarial_groups(fabric, None, field="--patterns")
            r = EngineResult(engine, used)
            out.append(r)
            if used != engine:
                r.skipped = f"OpenSM routed with {used or 'nothing'} instead" + (f" ({why})" if why else "")
                continue
            if save_dir is not None:
                with made_dir(Path(save_dir) / engine) as d:
                    fabric.save(d / "fabric.json")
            rep = verify_fabric(fabric, path_sls=from_fabric(fabric, "SA path records"))
            r.sls_used, r.vls_used, r.credit_loop = list(rep.sls_used), list(rep.vls_used), not rep.cdg_acyclic
            fabrics[engine] = fabric
    points = [
        Point(r.engine, TrafficSpec(pattern=pattern), params, load)
        for r in out
        if not r.skipped
        for pattern in patterns
        for load in loads
    ]
    if run is None:
        run = lambda fabrics, points, tick: run_points(fabrics, points, None, done=lambda i, r: tick())  # noqa: E731
    results = iter(run(fabrics, points, tick))
    for r in out:
        for pattern in patterns if not r.skipped else ():
            pts = []
            for load in loads:
                res = next(results)
                pt = {
                    "load": load,
                    "accepted_pct": res.accepted_pct,
                    "status": res.status,
                    # the simulator's own count of packets delivered per SL
                    "per_sl_packets": {str(x.sl): x.packets for x in res.per_sl if x.packets},
                }
                if res.deadlock is not None:
                    pt["deadlock"] = res.deadlock
                pts.append(pt)
            r.curves[pattern] = pts
    return out


def deadlocked(r: EngineResult) -> list[tuple[str, float]]:
    """(pattern, load) of every simulated run that stopped: a deadlock, or stalled (nothing
    moved for deadlock_us and no cycle, docs/simulator.md)."""
    return [(p, pt["load"]) for p, pts in r.curves.items() for pt in pts if pt["status"] != "done"]


def resource_rows(results: list[EngineResult]) -> list[list[str]]:
    """Seed 003 Table 2 style: what each engine used, and whether it can deadlock."""
    rows = []
    for r in results:
        if r.skipped:
            rows.append([r.engine, r.routed_by or "–", "–", "–", "not run", r.skipped])
            continue
        dead = deadlocked(r)
        if dead:
            verdict = "DEADLOCK"
            at: dict[str, list[str]] = {}
            for p, ld in dead:
                at.setdefault(p, []).append(f"{ld:g}")
            note = "simulated at load " + "; ".join(f"{p} {', '.join(lds)}" for p, lds in at.items())
        elif r.credit_loop:
            verdict = "CREDIT LOOP"
            note = "in the channel dependency graph; no simulated run closed it"
        else:
            verdict, note = "none", "acyclic channel dependency graph"
        rows.append(
            [
                r.engine,
                r.routed_by or "–",
                f"{len(r.sls_used)} ({','.join(map(str, r.sls_used))})",
                f"{len(r.vls_used)} ({','.join(map(str, r.vls_used))})",
                verdict,
                note,
            ]
        )
    return rows


def throughput_rows(results: list[EngineResult], pattern: str) -> list[list[str]]:
    """One row per routed engine: accepted traffic (%) at each load, DEADLOCK (or STALLED:
    nothing moved, no cycle) where the run stopped (its accepted traffic is no throughput)."""
    rows = []
    for r in results:
        if r.skipped:
            continue
        cells = [
            f"{pt['accepted_pct']:.1f}" if pt["status"] == "done" else pt["status"].upper() for pt in r.curves[pattern]
        ]
        rows.append([r.engine, *cells])
    return rows


def plot(results: list[EngineResult], patterns, path) -> None:
    """Accepted traffic against load, one panel per pattern. A deadlocked run is no point on
    its engine's curve (the curve breaks there) but a cross on the axis: a deadlock, not low
    throughput. Engines OpenSM did not route with are named under the panels."""
    plt = pyplot("compare-engines")

    fig, axes = plt.subplots(1, len(patterns), figsize=(4.5 * len(patterns), 4.2), squeeze=False)
    for ax, p in zip(axes[0], patterns, strict=True):
        for r in results:
            if r.skipped:
                continue
            xs = [pt["load"] for pt in r.curves[p]]
            ys = [pt["accepted_pct"] if pt["status"] == "done" else float("nan") for pt in r.curves[p]]
            label = f"{r.engine} ({len(r.sls_used)} SL, {len(r.vls_used)} VL)"
            (line,) = ax.plot(xs, ys, marker="o", ms=3, label=label)
            dead = [x for x, pt in zip(xs, r.curves[p], strict=True) if pt["status"] != "done"]
            if dead:
                ax.scatter(dead, [0] * len(dead), marker="x", s=80, color=line.get_color(), zorder=3, clip_on=False)
        ax.set_title(f"{p} (x on the axis: deadlock)")
        ax.set_xlabel("offered load")
        ax.set_ylabel("accepted traffic (%)")
        ax.set_ylim(0, 105)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    skipped = [f"{r.engine}: {r.skipped}" for r in results if r.skipped]
    if skipped:
        fig.text(0.01, 0.01, "not run: " + " | ".join(skipped)[:300], fontsize=7, va="bottom")
    fig.tight_layout(rect=(0, 0.05 if skipped else 0, 1, 1))
    write_figure(fig, path, dpi=110)
    plt.close(fig)
