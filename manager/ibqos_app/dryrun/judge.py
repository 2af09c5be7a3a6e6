"""Per-SLA verdicts: what each class asked for, what the plan promises, what the simulator saw."""

from __future__ import annotations

from dataclasses import asdict, dataclass

# The probe run's high-priority load, as a fraction of each class's share: light enough that
# its packets seldom meet each other, as the end-to-end bound assumes (docs/policy.md).
PROBE_FRACTION = 0.05

LATENCY_RULE = (
    "latency: the analysed worst wait for an arbitration turn (the guarantee) "
    "against the class's max_latency_us, and the end-to-end bound on the fabric's longest "
    "route (those waits, serialization, wire and switches; no queueing behind the class's "
    "own packets, no credit stalls) against its max_e2e_latency_us; the simulated p99 of "
    "a high-priority class at 5 % of its share (the bound's case) and at 80 % (with "
    "queueing behind its own packets) are shown beside it for information"
)


@dataclass
class ClassVerdict:
    name: str
    priority: str
    sls: list[int]
    requested: str  # "40 %" or "rest"
    planned_share: float  # exact analysis, terminal ports
    simulated_share: float | None
    worst_wait_us: float  # analysis: longest wait for an arbitration turn
    latency_bound_us: float | None
    sim_p99_us: float | None
    sim_mean_us: float | None
    bandwidth_ok: bool
    latency_ok: bool
    why: str = ""
    # end to end on the fabric's longest route of the class (ibqos/arbiter/e2e.py)
    e2e_bound_us: float | None = None
    e2e_max_us: float | None = None  # the policy's max_e2e_latency_us
    e2e_switch_hops: int | None = None
    sim_probe_p99_us: float | None = None  # high-priority classes at 5 % of their share

    @property
    def ok(self) -> bool:
        return self.bandwidth_ok and self.latency_ok

    def to_json(self) -> dict:
        return asdict(self) | {"ok": self.ok}


def bandwidth_rule(tol: float) -> str:
    return (
        f"Bandwidth: the simulated share of a saturated link (every class backlogged) at least "
        f"the planned and the requested share less "
        f"{tol:g} pp (policy verdict.share_tolerance_pp); more is not a failure, except "
        f"above a class's max_bandwidth plus {tol:g} pp"
    )


def judge_classes(
    plan,
    shares: dict[str, float] | None,
    sim_latency=None,
    switch_hops: dict[str, int] | None = None,
    sim_probe=None,
) -> list[ClassVerdict]:
    """Bandwidth (every class saturating): a class fails when its simulated share falls more
    than the tolerance below what the plan promises or what it asked for, or rises more than
    the tolerance above its max_bandwidth; getting more than a guarantee is what a
    work-conserving arbiter does with idle turns. Latency: the analysed worst-case
    arbitration wait against the bound (the guarantee), and the end-to-end bound on the
    class's longest route (`switch_hops[name]`, from the read-back routes; default the
    plan's) against max_e2e_latency_us; simulated latencies are reported."""
    tol = plan.share_tolerance_pp
    analysis = plan.analysis["terminal"]["per_class"]
    shares = shares or {}
    lat_by_name = sim_latency.class_by_name if sim_latency else {}
    probe_by_name = sim_probe.class_by_name if sim_probe else {}
    out = []
    for c in plan.classes:
        a = analysis[c.name]
        sim_share = shares.get(c.name)
        why = []
        bw_ok = True
        if sim_share is None:
            bw_ok, why = False, ["not simulated"]
        else:
            if sim_share < c.bandwidth.planned - tol:
                bw_ok = False
                why.append(
                    f"simulated {sim_share:.2f}% is more than {tol:g} pp below the planned {c.bandwidth.planned:.2f}%"
                )
            if c.bandwidth.requested != "rest" and sim_share < c.bandwidth.requested - tol:
                bw_ok = False
                why.append(
                    f"simulated {sim_share:.2f}% is more than {tol:g} pp below the requested {c.bandwidth.requested:g}%"
                )
            if c.bandwidth.max is not None and sim_share > c.bandwidth.max + tol:
                bw_ok = False
                why.append(
                    f"simulated {sim_share:.2f}% is more than {tol:g} pp above max_bandwidth {c.bandwidth.max:g}%"
                )
        bound = c.latency.max_latency_us
        lat_ok = bound is None or a["worst_wait_us"] <= bound + 1e-9
        if not lat_ok:
            why.append(f"analysed worst wait {a['worst_wait_us']:.3f} µs > bound {bound:g} µs")
        if c.latency.max_distance is not None and a["max_distance"] > c.latency.max_distance:
            lat_ok = False
            why.append(f"entry distance {a['max_distance']} > {c.latency.max_distance}")
        hops = (switch_hops or {}).get(c.name, plan.route_switch_hops)
        e2e = None
        if hops is not None:
            e2e = plan.e2e_bound(lambda r, n=c.name: plan.analysis[r]["per_class"][n]["worst_wait_us"], hops)
        want = c.latency.max_e2e_latency_us
        if want is not None and (e2e is None or e2e.bound_us is None or e2e.bound_us > want + 1e-9):
            lat_ok = False
            got = "unknown" if e2e is None or e2e.bound_us is None else f"{e2e.bound_us:.3f} µs"
            why.append(f"end-to-end bound {got} > max_e2e_latency_us {want:g} µs")
        out.append(
            ClassVerdict(
                name=c.name,
                priority=c.priority,
                sls=list(c.sls),
                requested="rest" if c.bandwidth.requested == "rest" else f"{c.bandwidth.requested:g} %",
                planned_share=c.bandwidth.planned,
                simulated_share=sim_share,
                worst_wait_us=a["worst_wait_us"],
                latency_bound_us=bound,
                sim_p99_us=lat_by_name[c.name].net_latency.p99_us if c.name in lat_by_name else None,
                sim_mean_us=lat_by_name[c.name].net_latency.mean_us if c.name in lat_by_name else None,
                bandwidth_ok=bw_ok,
                latency_ok=lat_ok,
                why="; ".join(why),
                e2e_bound_us=None if e2e is None else e2e.bound_us,
                e2e_max_us=want,
                e2e_switch_hops=hops,
                sim_probe_p99_us=(
                    probe_by_name[c.name].net_latency.p99_us
                    if c.name in probe_by_name and c.priority == "high"
                    else None
                ),
            )
        )
    return out
