"""Seed 003 §5.1: buffer size and VOQ on the 72-CA dragonfly (a=4, p=2, h=2), per routing engine.

Each engine routes the fabric on real OpenSM (dla through the plugin) and the state is read
back; the simulator then replays uniform traffic (QDR, 4 KB MTU, every VL its own fixed
buffer) for buffers of 1–32 packets per VL, with and without VOQ, loads 0.1–1.0. Outputs:
Figs. 10 and 11 (accepted traffic against load), Fig. 12 (improvement factors) and Table 1
(the VOQ factor's min/median/max over buffer sizes, the paper's values beside ours).

The improvement factor for one buffer size is the best accepted traffic at loads 0.5–1.0 with
VOQ over the same without. Engines whose paths need per-pair SLs (lash, dfsssp) are run only
when the read-back model carries them; an engine OpenSM replaces by another (updn on a
dragonfly) is reported as such, never silently.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ibqos.errors import ExternalError
from ibqos.redline import needs_path_sls

# Seed 003 Table 1 (min, median, max).
PAPER_TABLE1 = {
    "dla": (1.356, 1.428, 1.448),
    "d3r": (1.628, 2.373, 2.596),
    "lash": (1.179, 1.288, 1.420),
    "updn": (1.347, 1.412, 1.471),
    "dfsssp": (1.059, 1.126, 1.165),
    "sssp-df": (1.283, 1.298, 1.324),
    "minhop-df": (1.242, 1.251, 1.275),
}
BUFFERS = (1, 2, 4, 8, 16, 32)
LOADS = tuple(round(0.1 * k, 1) for k in range(1, 11))
FACTOR_LOADS = (0.5, 1.0)
# Every data VL its own equal share, as a VL-agnostic simulator arbitrates (the paper's
# simulator has no QoS tables); the high table unused.
QOS_CONF = {
    "qos": "TRUE",
    "max_op_vls": 8,
    "qos_max_vls": 8,
    "qos_high_limit": 0,
    "qos_vlarb_high": "0:0",
    "qos_vlarb_low": ",".join(f"{v}:64" for v in range(8)),
}


@dataclass
class Setup:
    engines: tuple[str, ...] = ("dla", "minhop", "updn", "lash", "dfsssp")
    buffers: tuple[int, ...] = BUFFERS
    loads: tuple[float, ...] = LOADS
    input_reads: tuple = ("N", 1)
    warmup_us: float = 1000.0
    time_us: float = 5000.0
    seed: int = 1


@dataclass
class EngineRun:
    engine: str
    routed_by: str | None = None  # the engine OpenSM configured the tables with
    skipped: str | None = None  # why it was not simulated
    # (input_reads, voq, buffer) -> [accepted % per load]
    curves: dict = field(default_factory=dict)
    statuses: dict = field(default_factory=dict)

    def factor(self, reads, buffer: int, loads) -> float | None:
        """None when a run it needs deadlocked: a deadlock is not low throughput."""
        lo, hi = FACTOR_LOADS
        pick = [i for i, ld in enumerate(loads) if lo - 1e-9 <= ld <= hi + 1e-9]
        if any(self.statuses[(reads, voq, buffer)][i] != "done" for voq in (False, True) for i in pick):
            return None
        voq = max(self.curves[(reads, True, buffer)][i] for i in pick)
        fifo = max(self.curves[(reads, False, buffer)][i] for i in pick)
        return voq / fifo if fifo > 0 else None


def route(harness, engine: str):
    """(fabric, engine OpenSM used) for one engine on the running ibsim fabric, with the SA's
    per-pair SLs where the engine sets them."""
    from ..compare_engines import route_and_read

    return route_and_read(harness, engine)


def has_path_sls(fabric) -> bool:
    return bool(fabric.path_sls)


def curve_keys(setup: Setup) -> list[tuple]:
    """(input_reads, voq, buffer) of every curve an engine gets, in the order they are drawn."""
    return [(reads, voq, b) for reads in setup.input_reads for voq in (False, True) for b in setup.buffers]


def points(engine: str, setup: Setup) -> list:
    """One simulation per (curve, load): uniform traffic, QDR, 4 KB MTU, the curve's switch."""
    from ..sim import SimParams, TrafficSpec
    from ..sim.points import Point

    out = []
    for reads, voq, b in curve_keys(setup):
        params = SimParams(
            rate="QDR",
            mtu=4096,
            buffer_packets=b,
            voq=voq,
            input_reads=reads,
            warmup_us=setup.warmup_us,
            time_us=setup.time_us,
            seed=setup.seed,
        )
        out += [Point(engine, TrafficSpec(pattern="uniform"), params, load) for load in setup.loads]
    return out


def run_experiment(
    setup: Setup,
    tick: Callable[[], None] = lambda: None,
    note: Callable[[str], None] = print,
    run=None,
) -> list[EngineRun]:
    """Route every engine on real OpenSM (one at a time), then simulate all their points with
    `run(fabrics, points, tick)` (sweeprun.runner: local cores or a Slurm array; default every
    local core)."""
    import tempfile

    from ..harness import Harness
    from ..sim.points import run_points
    from ..topology import dragonfly

    runs, fabrics = [], {}
    with (
        tempfile.TemporaryDirectory(prefix="ibqos-paper-") as tmp,
        Harness(dragonfly(4, 2, 2).write_net(Path(tmp) / "df72.net"), run_dir=Path(tmp) / "fabric") as h,
    ):
        for engine in setup.engines:
            fabric, used = route(h, engine)
            if used != engine:
                runs.append(EngineRun(engine, used, f"OpenSM routed with {used or 'nothing'} instead"))
                note(f"{engine}: OpenSM used {used or 'no engine'}; not simulated as {engine}")
                continue
            if needs_path_sls(engine) and not has_path_sls(fabric):
                runs.append(EngineRun(engine, used, "needs per-pair SLs in the fabric model"))
                note(f"{engine}: paths use several SLs and the model carries none per pair; skipped")
                continue
            runs.append(EngineRun(engine, used))
            fabrics[engine] = fabric
    todo = [p for r in runs if not r.skipped for p in points(r.engine, setup)]
    if run is None:
        run = lambda fabrics, points, tick: run_points(fabrics, points, None, done=lambda i, r: tick())  # noqa: E731
    results = iter(run(fabrics, todo, tick))
    for r in runs:
        for key in curve_keys(setup) if not r.skipped else ():
            got = [next(results) for _ in setup.loads]
            r.curves[key] = [x.accepted_pct for x in got]
            r.statuses[key] = [x.status for x in got]
    return runs


def table1(runs: list[EngineRun], setup: Setup) -> list[dict]:
    rows = []
    for r in runs:
        row = {"engine": r.engine, "paper": PAPER_TABLE1.get(r.engine), "skipped": r.skipped, "ours": {}}
        if not r.skipped:
            for reads in setup.input_reads:
                per = [r.factor(reads, b, setup.loads) for b in setup.buffers]
                f = [x for x in per if x is not None]
                row["ours"][str(reads)] = {
                    "per_buffer": {str(b): None if x is None else round(x, 3) for b, x in zip(setup.buffers, per)},
                    "min": round(min(f), 3) if f else None,
                    "median": round(statistics.median(f), 3) if f else None,
                    "max": round(max(f), 3) if f else None,
                }
        rows.append(row)
    return rows


def table1_markdown(rows: list[dict], setup: Setup) -> str:
    head = ["engine", "paper min / med / max"]
    for reads in setup.input_reads:
        head.append(f"ours, input reads {reads}: min / med / max")
    for reads in setup.input_reads:
        head.append(f"reads {reads}: factor per buffer " + "/".join(map(str, setup.buffers)))
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        p = r["paper"]
        cells = [r["engine"], " / ".join(f"{x:.3f}" for x in p) if p else "—"]
        if r["skipped"]:
            cells += [f"not run: {r['skipped']}"] * (2 * len(setup.input_reads))
        else:
            for reads in setup.input_reads:
                o = r["ours"][str(reads)]
                cells.append(
                    f"{o['min']:.3f} / {o['median']:.3f} / {o['max']:.3f}" if o["min"] is not None else "deadlocks"
                )
            for reads in setup.input_reads:
                cells.append(
                    " ".join(
                        "deadlock" if x is None else f"{x:.2f}" for x in r["ours"][str(reads)]["per_buffer"].values()
                    )
                )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(runs: list[EngineRun], setup: Setup, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = [r for r in runs if not r.skipped]
    written = []
    for reads in setup.input_reads:
        for voq, fig_no in ((False, 10), (True, 11)):
            fig, axes = plt.subplots(1, max(1, len(done)), figsize=(4.2 * max(1, len(done)), 3.6), squeeze=False)
            for ax, r in zip(axes[0], done):
                for b in setup.buffers:
                    ys, sts = r.curves[(reads, voq, b)], r.statuses[(reads, voq, b)]
                    (line,) = ax.plot(setup.loads, ys, marker="o", ms=3, label=f"{b} pkt")
                    dead = [(x, y) for x, y, st in zip(setup.loads, ys, sts) if st == "deadlock"]
                    if dead:  # a deadlock is not low throughput: marked where it happened
                        ax.scatter(*zip(*dead), marker="x", s=60, color=line.get_color(), zorder=3)
                if any(st == "deadlock" for k, v in r.statuses.items() if k[:2] == (reads, voq) for st in v):
                    ax.text(
                        0.02,
                        0.95,
                        "x: deadlock (credit loop)",
                        transform=ax.transAxes,
                        fontsize=8,
                        va="top",
                        color="darkred",
                    )
                ax.set_title(f"{r.engine} ({'VOQ' if voq else 'no VOQ'})")
                ax.set_xlabel("offered load")
                ax.set_ylabel("accepted traffic (%)")
                ax.set_ylim(0, 105)
                ax.grid(alpha=0.3)
            axes[0][0].legend(fontsize=7, title="buffer/VL")
            fig.suptitle(f"Fig. {fig_no}: 72-CA dragonfly, uniform, input reads {reads}")
            fig.tight_layout()
            path = out / f"fig{fig_no}-reads{reads}.png"
            fig.savefig(path, dpi=110)
            plt.close(fig)
            written.append(path)
        fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
        for r in done:
            for ax, voq in ((axes[0], False), (axes[1], True)):
                if any(st != "done" for b in setup.buffers for st in r.statuses[(reads, voq, b)]):
                    continue  # a deadlocked engine has no throughput to compare
                base = max(r.curves[(reads, voq, setup.buffers[0])])
                ax.plot(
                    setup.buffers,
                    [max(r.curves[(reads, voq, b)]) / base if base else None for b in setup.buffers],
                    marker="o",
                    label=r.engine,
                )
            axes[2].plot(
                setup.buffers, [r.factor(reads, b, setup.loads) for b in setup.buffers], marker="o", label=r.engine
            )
        for ax, title in zip(axes, ("(a) buffer, no VOQ", "(b) buffer, VOQ", "(c) VOQ over no VOQ")):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("buffer (packets per VL)")
            ax.set_ylabel("improvement factor")
            ax.set_title(title)
            ax.grid(alpha=0.3)
        axes[2].legend(fontsize=7)
        fig.suptitle(f"Fig. 12, input reads {reads}")
        fig.tight_layout()
        path = out / f"fig12-reads{reads}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def write_outputs(runs: list[EngineRun], setup: Setup, out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    rows = table1(runs, setup)
    md = out / "table1.md"
    md.write_text(
        "# Seed 003 Table 1: VOQ improvement factor, paper and ibqos\n\n"
        f"72-CA dragonfly (a=4, p=2, h=2), QDR, 4 KB MTU, uniform traffic, "
        f"{setup.warmup_us:g} µs warm-up + {setup.time_us:g} µs measured, seed "
        f"{setup.seed}; factor = best accepted traffic at loads 0.5-1.0 with VOQ over "
        "without, per buffer size. Input reads: packets a switch input feeds at once "
        '(docs/simulator.md, "Switch model").\n\n' + table1_markdown(rows, setup)
    )
    doc = {
        "schema": "ibqos.paper.seed003-5.1/1",
        "setup": setup.__dict__ | {"input_reads": list(setup.input_reads)},
        "table1": rows,
        "runs": [
            {
                "engine": r.engine,
                "routed_by": r.routed_by,
                "skipped": r.skipped,
                "curves": [
                    {"input_reads": str(k[0]), "voq": k[1], "buffer": k[2], "accepted_pct": v, "status": r.statuses[k]}
                    for k, v in r.curves.items()
                ],
            }
            for r in runs
        ],
    }
    js = out / "results.json"
    js.write_text(json.dumps(doc, indent=1))
    files = {"table": md, "json": js}
    for p in plot(runs, setup, out):
        files[p.stem] = p
    return files


def check_deadlocks(runs: list[EngineRun]) -> list[str]:
    """Runs that deadlocked: shown as such, never as low throughput."""
    out = []
    for r in runs:
        for k, sts in r.statuses.items():
            if any(s == "deadlock" for s in sts):
                out.append(f"{r.engine} (input reads {k[0]}, {'VOQ' if k[1] else 'no VOQ'}, {k[2]} pkt): deadlock")
    return out


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise ExternalError("matplotlib is missing: run 'make deps'") from exc
