"""The monitor's terminal view: one row per link direction that carried traffic."""

from __future__ import annotations

from rich.table import Table

from ..plan import Plan
from ..term import literal
from .judge import Judged


def render(judged: Judged, plan: Plan) -> Table:
    t = Table(title=f"ibqos monitor: {judged.interval_s:.1f} s interval, {len(judged.links)} link directions")
    t.add_column("link")
    t.add_column("util", justify="right")
    t.add_column("over", justify="right")  # a sub-window's shares say so: they are not the interval's
    for c in plan.classes:
        t.add_column(f"{c.name} ({c.bandwidth.target:g}%)", justify="right")
    t.add_column("VL wait")
    busy = sorted((ln for ln in judged.links if ln.utilisation), key=lambda ln: -(ln.utilisation or 0))
    for link in busy:
        cells = []
        for load in link.classes:
            text = "-" if load.share is None else f"{100 * load.share:.1f}% {load.gbps:.2f}G"
            cells.append(
                literal((f"{text} !!", "red"))
                if load.violation
                else literal((f"{text} ~", "yellow"))
                if load.congested
                else literal(text)
            )
        wait = " ".join(f"{v}:{n}" for v, n in link.vl_wait.items() if n)
        t.add_row(
            literal(f"{link.node}[{link.port}] → {link.peer}[{link.peer_port}]"),
            f"{100 * (link.utilisation or 0):.0f}%",
            f"{link.seconds:.3f} s window" if link.over == "window" and link.seconds is not None else "interval",
            *cells,
            wait,
        )
    if judged.findings:
        t.caption = literal("\n".join(f.message for f in judged.findings))
    return t
