"""report.json and report.html (one static page, plots embedded as PNG)."""

from __future__ import annotations

import base64
import io
from pathlib import Path

from ibqos import __version__
from ibqos.arbiter import ArbTable
from ibqos.docfile import write_atomic, write_json
from ibqos.extras import pyplot
from ibqos.roles import ROLES
from ibqos.templating import render

from .judge import LATENCY_RULE, bandwidth_rule
from .verdict import planned_entries, summary


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode()


def plots(verdicts) -> list[dict]:
    plt = pyplot("the dry run's report.html")

    names = [v.name for v in verdicts]
    x = range(len(names))
    out = []
    fig, ax = plt.subplots(figsize=(7, 3.6))
    w = 0.38
    ax.bar([i - w / 2 for i in x], [v.planned_share for v in verdicts], w, label="planned (exact analysis)")
    ax.bar([i + w / 2 for i in x], [v.simulated_share or 0 for v in verdicts], w, label="simulated")
    ax.set_xticks(list(x), names)
    ax.set_xlabel("QoS class")
    ax.set_ylabel("share of a contended link (%)")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    out.append({"title": "Bandwidth share per class", "png_b64": _png(fig)})
    plt.close(fig)

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.6))
    a1.bar(list(x), [v.worst_wait_us for v in verdicts], 0.5, label="worst wait for a turn (analysis)")
    bounds = [(i, v.latency_bound_us) for i, v in zip(x, verdicts, strict=True) if v.latency_bound_us is not None]
    _bound_marks(a1, bounds, "the class's bound")
    a1.set_title("per-port arbitration wait")
    a2.bar([i - w / 2 for i in x], [v.sim_mean_us or 0 for v in verdicts], w, label="mean")
    a2.bar([i + w / 2 for i in x], [v.sim_p99_us or 0 for v in verdicts], w, label="p99")
    e2e = [
        (i, v.e2e_bound_us)
        for i, v in zip(x, verdicts, strict=True)
        if v.e2e_bound_us is not None and v.sim_p99_us is not None
    ]
    # the bound beside the simulated classes only: a saturating class's p99 is its backlog
    _bound_marks(a2, e2e, "end-to-end bound (analysis)")
    a2.set_title("end to end: simulated network latency (paced run) and the bound")
    for ax in (a1, a2):
        ax.set_xticks(list(x), names)
        ax.set_xlabel("QoS class")
        ax.set_ylabel("µs")
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    out.append({"title": "Latency per class", "png_b64": _png(fig)})
    plt.close(fig)
    return out


def _bound_marks(ax, bounds: list[tuple[int, float]], label: str) -> None:
    """A red bar per (class position, bound) over the class's bars."""
    if bounds:
        ax.scatter(
            [i for i, _ in bounds], [b for _, b in bounds], marker="_", s=900, color="red", label=label, zorder=3
        )


def report_dict(dr) -> dict:
    s, cfg = dr.s, dr.cfg

    checks = dr.fabric_checks()
    return {
        "schema": "ibqos.dryrun/1",
        "ok": dr.ok,
        "summary": summary(s),
        "policy": str(cfg.policy),  # the file given: a policy, or a plan when input is "plan"
        "input": "plan" if cfg.plan_given else "policy",
        "policy_sha256": s.plan.policy_sha256,
        "topology": s.topology_name,
        "ibsim": s.ibsim.to_json() if s.ibsim else None,
        "vlarb_capacity": s.capacity.to_json(planned_entries(s.plan)),
        "traffic": cfg.traffic,
        "run_dir": str(cfg.out),
        "faults": [f.to_json() for f in s.faults],
        "faults_together": s.cut_together.to_json() if s.cut_together else None,
        "refusal": s.refusal,
        "classes": [v.to_json() for v in s.verdicts],
        "rules": {
            "share_tolerance_pp": s.plan.share_tolerance_pp,
            "bandwidth": bandwidth_rule(s.plan.share_tolerance_pp),
            "latency": LATENCY_RULE,
        },
        "fabric_checks": checks,
        "conformance": s.conform,
        "mtu_below_plan": [str(f) for f in s.mtu],
        "verify": {
            "pairs": s.verify.pairs,
            "delivered": s.verify.delivered,
            "hops": s.verify.hops,
            "vls_used": s.verify.vls_used,
            "cdg_acyclic": s.verify.cdg_acyclic,
            "cdg": s.verify.cdg_state,  # "incomplete" when routes loop: acyclic proves nothing then
            "routing_loops": s.verify.loops,
            "cycle": s.verify.cycle,
        },
        "simulation": {"status": s.sim.status, "accepted_pct": s.sim.accepted_pct, "params": s.sim.params},
        "link_shares": s.link_shares.to_json(),
        "stages": [{"name": t.name, "seconds": round(t.seconds, 3), "note": t.note} for t in s.stages],
        "notes": s.notes,
    }


def tables(plan) -> dict:
    """What the HTML shows of the configuration: VLArb per role and SL -> class -> VL."""
    roles = []
    for role in ROLES:
        t = plan.vlarb.role(role)
        roles.append(
            {
                "role": role,
                "high": ArbTable.format_entries(t.high) or "–",
                "low": ArbTable.format_entries(t.low) or "–",
                "limit": t.limit,
            }
        )
    by_index = {c.index: c for c in plan.classes}
    sls = [
        {"sl": sl, "class": by_index[k].name, "vls": ",".join(map(str, by_index[k].vls))}
        for sl, k in enumerate(plan.sl2class)
    ]
    return {"vlarb": roles, "sl2vl": sls}


def write_reports(dr) -> None:
    rep = report_dict(dr)
    write_json(dr.cfg.out / "report.json", rep)
    config = {name: Path(p).read_text() for name, p in sorted(dr.s.rendered.items())}
    html = render(
        "report.html.j2",
        report=rep,
        plots=plots(dr.s.verdicts),
        version=__version__,
        tables=tables(dr.s.plan),
        config=config,
    )
    write_atomic(dr.cfg.out / "report.html", html)
