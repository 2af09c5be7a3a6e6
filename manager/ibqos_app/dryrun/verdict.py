"""The dry run's verdict on a finished run: the fabric checks (routing engine, tables equal
the plan, reachability, CDG, simulation) and whether the run passes. The per-SLA rules are
judge.py's; the stages only gather what is judged here."""

from __future__ import annotations

from ibqos.redline import LAYERED

from .judge import PROBE_FRACTION


def fabric_checks(s) -> list[dict]:
    """One row per check: `ok` True, False, or None for information."""
    v = s.verify
    sim = s.sim
    reports = list(s.verify_by_class.values())
    acyclic = all(r.cdg_state == "acyclic" for r in reports)
    loops = next((f for r in reports for f in r.findings() if f.kind == "routing-loop"), None)
    faults = [{"check": "fault applied", "ok": None, "result": f.describe()} for f in s.faults]
    if s.cut_together:
        faults.append({"check": "faults applied together", "ok": None, "result": s.cut_together.describe()})
    return faults + [
        # which plan is judged: the policy's own, or (--fit-to-fabric) one fitted to the ports
        {"check": "VLArb plan judged", "ok": True, "result": s.capacity.describe(planned_entries(s.plan))},
        {
            "check": "routing engine",
            "ok": not s.refusal,
            "result": ", ".join(s.engines) + (f" (dla refused: {s.refusal})" if s.refusal else ""),
        },
        {
            "check": "tables equal the plan",
            "ok": not s.conform,
            "result": "every port" if not s.conform else "; ".join(s.conform[:3]),
        },
        {
            "check": f"link MTU ≥ the plan's {s.plan.fabric.mtu}",
            "ok": not s.mtu,
            "result": "every link"
            if not s.mtu
            else "; ".join(map(str, s.mtu[:3])) + (f"; and {len(s.mtu) - 3} more ports" if len(s.mtu) > 3 else ""),
        },
        # a node the SM cannot reach (an island) is in no CA pair: without this row a fabric
        # with half its nodes cut off would pass on the half that is left
        {
            "check": "every node of the net file discovered",
            "ok": not s.undiscovered,
            "result": "yes"
            if not s.undiscovered
            else f"{len(s.undiscovered)} not reached by the SM: "
            + ", ".join(s.undiscovered[:6])
            + (" …" if len(s.undiscovered) > 6 else ""),
        },
        {"check": "reachability", "ok": v.delivered == v.pairs, "result": f"{v.delivered}/{v.pairs} CA pairs"},
        # the verifier's one routing-loop check (VerifyReport.findings), as verify and status
        {"check": "routing loops", "ok": loops is None, "result": loops.message if loops else "none in the LFTs"},
        {"check": "switch hops", "ok": True, "result": ", ".join(f"{k}: {n}" for k, n in v.hops.items())},
        {"check": "VLs used (all classes)", "ok": True, "result": ",".join(map(str, s.vls_used))},
        _cdg_check(s, acyclic, v),
        {
            "check": "simulation",
            # a deadlock with the class SLs on a layered engine's routes is as unjudged as its CDG
            "ok": sim.status == "done" and (None if sim.deadlock and _layered(s) else not sim.deadlock),
            "result": f"{sim.status}, accepted {sim.accepted_pct:.1f}% of offered capacity"
            + (f"; deadlock: {' → '.join(sim.deadlock.get('cycle', []))}" if sim.deadlock else ""),
        },
        # Informational (ok None): the bound against the light-load simulation, where the
        # bound's assumption (no queueing behind the class's own packets) nearly holds.
        {
            "check": f"end-to-end bound vs p99 at {PROBE_FRACTION:.0%} load",
            "ok": None,
            "result": ", ".join(
                f"{x.name} {x.sim_probe_p99_us:.2f} {'≤' if x.sim_probe_p99_us <= x.e2e_bound_us else '>'} "
                f"{x.e2e_bound_us:.2f} µs"
                for x in s.verdicts
                if x.sim_probe_p99_us is not None and x.e2e_bound_us is not None
            )
            or "no high-priority class",
        },
        # Informational (ok None): with saturating low classes, in-network latency of a
        # paced high class depends on the traffic mix, not only on the arbiter.
        {
            "check": "mean network latency (paced run)",
            "ok": None,
            "result": ", ".join(
                f"{x.name} ({x.priority}) {x.sim_mean_us:.2f} µs" for x in s.verdicts if x.sim_mean_us is not None
            ),
        },
    ]


def _layered(s) -> str | None:
    """The fallback in force after dla refused a faulted fabric, when it gives every path an SL
    of its own (its layer). Only then: the run fails on the refusal, so a CDG left unjudged
    never passes as 'verified deadlock-free'."""
    return s.engines[-1] if s.refusal and s.engines and s.engines[-1] in LAYERED else None


def _cdg_check(s, acyclic: bool, v) -> dict:
    # The dry run judges each class on its SL for every pair. Under a layered engine the SA
    # hands each path its layer's SL instead, and one SL for all pairs shows loops the layers
    # avoid (docs/fallback.md): after dla refused df72 less one global link, 'cycle: ...' here
    # while the SA's path SLs give an acyclic graph (ibqos.verify and ibdmchk). `opensm --once`
    # answers no path record, so the dry run cannot judge it; `ibqos verify --live` does.
    if (engine := _layered(s)) is not None:
        return {
            "check": "channel dependency graph",
            "ok": None,
            "result": f"not judged: {engine} gives every path the SL of its layer, which a dry run's OpenSM "
            "(--once) does not answer; judge it with the SA's path SLs: ibqos verify --live",
        }
    return {
        "check": "channel dependency graph",
        "ok": acyclic,
        "result": "acyclic for every class (deadlock-free)"
        if acyclic
        else ("cycle: " + " → ".join(v.cycle) if not v.cdg_acyclic else v.cdg_text()),
    }


def planned_entries(plan) -> tuple[int, int]:
    """The entries per table the plan fills (what OpenSM 3.3.23 can program of its capacity)."""
    return (plan.fabric.high_cap, plan.fabric.low_cap)


def passed(s) -> bool:
    """Every fabric check that judges holds and every SLA is met."""
    return all(c["ok"] is not False for c in fabric_checks(s)) and all(v.ok for v in s.verdicts)


def summary(s) -> str:
    """One line: what passed, or what failed (the SLAs missed, the fabric checks failed);
    after faults, how many SLAs still hold."""
    failed = [v.name for v in s.verdicts if not v.ok]
    bad_checks = [c["check"] for c in fabric_checks(s) if c["ok"] is False]
    if passed(s):
        line = f"all {len(s.verdicts)} SLAs met on a verified deadlock-free fabric"
    else:
        line = "; ".join(
            filter(
                None,
                [
                    f"SLA missed: {', '.join(failed)}" if failed else "",
                    f"fabric check failed: {', '.join(bad_checks)}" if bad_checks else "",
                ],
            )
        )
    if s.capacity.fitted:
        p, f = s.capacity.policy, s.capacity.plan_cap
        line += f"; judged the plan fitted to the fabric's {f[0]}/{f[1]} VLArb tables, not the policy's {p[0]}/{p[1]}"
    if s.faults:
        met = [v.name for v in s.verdicts if v.ok]
        line = (
            f"with {', '.join(f.spec.text for f in s.faults)}: "
            f"{len(met)}/{len(s.verdicts)} SLAs still met" + (f" ({', '.join(met)})" if met else "") + "; " + line
        )
    return line
