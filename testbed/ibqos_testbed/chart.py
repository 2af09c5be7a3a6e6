"""PNG of a report: predicted vs measured share per SL, and latency per SL (seed 002 Fig. 4)."""

from __future__ import annotations

from pathlib import Path

from ibqos.docfile import write_figure
from ibqos.errors import InputError
from ibqos.extras import pyplot

from .compare import Report


def write_png(rep: Report, path: Path) -> None:
    if not path.name or path.is_dir():
        raise InputError("is a directory, not a PNG file to write", file=path, field="--png")
    if not path.parent.is_dir():
        raise InputError("its directory does not exist", file=path, field="--png")
    plt = pyplot("testbed report --png")
    fig = figure(rep)
    try:
        write_figure(fig, path, dpi=100)
    finally:
        plt.close(fig)


def figure(rep: Report):
    plt = pyplot("testbed report --png")

    labels = [f"SL {','.join(map(str, c.sls))}\n{c.name}" for c in rep.classes]
    x = list(range(len(labels)))
    series = [("predicted", [c.predicted for c in rep.classes], "#9aa5b1")]
    if rep.simulated_source:
        series.append(("simulated", [c.simulated for c in rep.classes], "#6c8ebf"))
    series.append(("measured", [c.measured for c in rep.classes], "#d9822b"))

    fig, (ax_bw, ax_lat) = plt.subplots(1, 2, figsize=(12, 4.8))
    width = 0.8 / len(series)
    for i, (name, values, color) in enumerate(series):
        xs = [xi - 0.4 + width * (i + 0.5) for xi in x]
        ax_bw.bar(xs, [v or 0 for v in values], width, label=f"{name} share", color=color)
    for xi, c in zip(x, rep.classes, strict=True):
        if c.diff_predicted is not None:
            top = max(v for v in (c.measured, c.predicted, c.simulated) if v is not None)
            ax_bw.annotate(
                f"{c.diff_predicted:+.2f} pp",
                (xi, top + 1),
                ha="center",
                fontsize=8,
                color="black" if c.passed is not False else "red",
            )
    top = max([v for _, vs, _ in series for v in vs if v is not None] or [1])
    ax_bw.set_ylim(0, top * 1.25)  # room for the legend and the pp labels
    ax_bw.set_xticks(x, labels)
    ax_bw.set_xlabel("service level (class)")
    ax_bw.set_ylabel("share of measured link bandwidth (%)")
    ax_bw.set_title(f"Bandwidth share per SL (tolerance {rep.tolerance:g} pp)")
    ax_bw.legend()

    lat_series = [("idle", "lat_idle", "#4c956c"), ("under load", "lat_loaded", "#b23a48")]
    for i, (name, attr, color) in enumerate(lat_series):
        avgs, ups = [], []
        for c in rep.classes:
            lats = [getattr(m, attr) for m in rep.per_sl if m.sl in c.sls and getattr(m, attr)]
            worst = max(lats, key=lambda v: v.t_avg) if lats else None
            avgs.append(worst.t_avg if worst else 0)
            ups.append(worst.p99 - worst.t_avg if worst else 0)
        xs = [xi - 0.2 + 0.4 * i for xi in x]
        ax_lat.bar(
            xs,
            avgs,
            0.4,
            yerr=[[0] * len(ups), ups],
            capsize=3,
            color=color,
            label=f"{name}: average (bar to 99th percentile)",
        )
    ax_lat.set_xticks(x, labels)
    ax_lat.set_xlabel("service level (class)")
    ax_lat.set_ylabel("message latency, ib_send_lat (µs)")
    ax_lat.set_title("Latency per SL")
    ax_lat.legend()

    fig.suptitle(
        rep.verdict if len(rep.verdict) < 110 else rep.verdict[:107] + "...",
        color="red" if not rep.passed else "black",
        fontsize=10,
    )
    fig.tight_layout()
    return fig
