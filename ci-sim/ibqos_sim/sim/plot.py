"""PNG plots: load-throughput curves and latency per SL."""

from __future__ import annotations

from pathlib import Path

from ibqos.docfile import write_figure
from ibqos.extras import pyplot

from .result import SimResult


def _plt():
    return pyplot("simulate --plot")


def _save(fig, path: Path) -> Path:
    return write_figure(fig, path, dpi=120, bbox_inches="tight")


def load_throughput(results: list[SimResult], path: str | Path, title: str = "") -> Path:
    """Accepted vs offered load, total and per class (seed 003 Figs. 10-19 style)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4.5))
    loads = [r.load for r in results]
    ax.plot(loads, [r.accepted_pct / 100 for r in results], "o-", lw=2, label="all")
    names = [c.name for c in results[0].per_class] if results else []
    if len(names) > 1:
        for n in names:
            ax.plot(loads, [r.class_by_name[n].accepted_pct / 100 for r in results], ".--", label=n)
    ax.plot([0, 1], [0, 1], ":", color="grey", lw=1)
    for r in results:
        if r.status != "done":
            ax.annotate(r.status, (r.load, r.accepted_pct / 100), color="red", fontsize=8)
    ax.set_xlabel("offered load (fraction of link rate)")
    ax.set_ylabel("accepted traffic (normalised)")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title or "load-throughput")
    path = _save(fig, Path(path))
    plt.close(fig)
    return path


def latency_per_sl(results: list[SimResult], path: str | Path, title: str = "") -> Path:
    """One run: mean/p50/p99 bars per SL. A sweep: p99 against load per SL."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4.5))
    if len(results) == 1:
        r = results[0]
        sls = [s for s in r.per_sl if s.packets]
        xs = range(len(sls))
        w = 0.27
        for k, (lab, get) in enumerate(
            (
                ("mean", lambda s: s.net_latency.mean_us),
                ("p50", lambda s: s.net_latency.p50_us),
                ("p99", lambda s: s.net_latency.p99_us),
            )
        ):
            ax.bar([x + (k - 1) * w for x in xs], [get(s) for s in sls], w, label=lab)
        ax.set_xticks(list(xs), [s.name for s in sls])
        ax.set_xlabel("service level")
    else:
        names = sorted({s.name for r in results for s in r.per_sl})
        for n in names:
            pts = [(r.load, s.net_latency.p99_us) for r in results for s in r.per_sl if s.name == n and s.packets]
            if pts:
                ax.plot(*zip(*pts, strict=True), "o-", label=f"{n} p99")
        ax.set_xlabel("offered load (fraction of link rate)")
        ax.set_yscale("log")
    ax.set_ylabel("packet latency, injection to delivery (µs)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title or "latency per SL")
    path = _save(fig, Path(path))
    plt.close(fig)
    return path
