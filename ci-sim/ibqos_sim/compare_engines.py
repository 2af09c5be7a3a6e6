"""Routing engines side by side on one fabric (seed 003 §5.2): real OpenSM routes it with each
engine (dla through the plugin), the state is read back live, with the SA's SL for every CA
pair where the engine sets one (lash, dfsssp), and the simulator replays uniform, 6-point 3D
stencil and hot-spot traffic on exactly that state. An engine OpenSM replaces by another
(updn on a dragonfly) is reported as such; a deadlock is reported as a deadlock."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ibqos import osmlog

from .paper.seed003 import QOS_CONF

PER_PATH_SL = ("lash", "dfsssp")
PATTERNS = ("uniform", "stencil", "hotspot")


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
    from ibqos.verify.sa_paths import query_path_sls

    sm = h.start_sm(
        engine="dla,minhop" if engine == "dla" else engine, plugin=engine == "dla", conf=QOS_CONF, log_flags=0x03
    )
    try:
        used = osmlog.configured_engines(sm.lines())
        fabric = h.read_back(save=False)
        if used and used[-1] in PER_PATH_SL:
            fabric.path_sls = dict(query_path_sls(fabric, h.env).by_lids)
    finally:
        sm.stop()
    return fabric, (used[-1] if used else None)


def compare(
    netfile, engines, patterns, loads, params, tick: Callable[[], None] = lambda: None, run_dir=None
) -> list[EngineResult]:
    from ibqos.verify import verify_fabric
    from ibqos.verify.pathsl import PathSLs

    from .harness import Harness
    from .sim import TrafficSpec, compile_network, simulate

    out = []
    with Harness(netfile, run_dir=run_dir) as h:
        for engine in engines:
            fabric, used = route_and_read(h, engine)
            r = EngineResult(engine, used)
            if used != engine:
                r.skipped = f"OpenSM routed with {used or 'nothing'} instead"
                out.append(r)
                continue
            psl = PathSLs(fabric.path_sls) if fabric.path_sls is not None else None
            rep = verify_fabric(fabric, path_sls=psl)
            r.sls_used, r.vls_used, r.credit_loop = list(rep.sls_used), list(rep.vls_used), not rep.cdg_acyclic
            net = compile_network(fabric, rate_gbps=params.rate_gbps, source=engine)
            for pattern in patterns:
                pts = []
                for load in loads:
                    res = simulate(net, TrafficSpec(pattern=pattern), params, load)
                    pts.append(
                        {
                            "load": load,
                            "accepted_pct": res.accepted_pct,
                            "status": res.status,
                            "per_sl_packets": {str(x.sl): x.packets for x in res.per_sl if x.packets},
                        }
                    )
                    tick()
                r.curves[pattern] = pts
            out.append(r)
    return out


def table_rows(results: list[EngineResult], patterns) -> list[list[str]]:
    rows = []
    for r in results:
        if r.skipped:
            rows.append([r.engine, r.routed_by or "–", "–", "–", "–"] + [f"not run: {r.skipped}"] * len(patterns))
            continue
        cells = [
            r.engine,
            r.routed_by,
            ",".join(map(str, r.sls_used)),
            ",".join(map(str, r.vls_used)),
            "CREDIT LOOP" if r.credit_loop else "none",
        ]
        for p in patterns:
            cells.append(
                " ".join(
                    "deadlock" if pt["status"] == "deadlock" else f"{pt['accepted_pct']:.1f}" for pt in r.curves[p]
                )
            )
        rows.append(cells)
    return rows


def plot(results: list[EngineResult], patterns, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(patterns), figsize=(4.5 * len(patterns), 3.8), squeeze=False)
    for ax, p in zip(axes[0], patterns):
        for r in results:
            if r.skipped:
                continue
            xs = [pt["load"] for pt in r.curves[p]]
            ys = [pt["accepted_pct"] for pt in r.curves[p]]
            (line,) = ax.plot(xs, ys, marker="o", ms=3, label=r.engine)
            dead = [(x, y) for x, y, pt in zip(xs, ys, r.curves[p]) if pt["status"] == "deadlock"]
            if dead:
                ax.scatter(*zip(*dead), marker="x", s=70, color=line.get_color(), zorder=3)
        ax.set_title(f"{p} (x: deadlock)")
        ax.set_xlabel("offered load")
        ax.set_ylabel("accepted traffic (%)")
        ax.set_ylim(0, 105)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
