"""Policy -> Plan: SL assignment, per-role VLArb synthesis, exact analysis of the result.

    from ibqos.planner import make_plan
    plan = make_plan(load_policy("examples/four-class.yaml"))

`make_plan(policy, cap=(high, low))` plans for another VLArb capacity than the policy's
(for example 8/8 on Debian's ibsim). `plan_and_analyze(path)` is the call `make bench` times.
"""

from __future__ import annotations

from pathlib import Path

from ..arbiter.e2e import EndToEnd
from ..errors import InputError
from ..plan.model import (
    SCHEMA,
    Bandwidth,
    EndToEndPlan,
    Latency,
    Plan,
    PlanClass,
    PlanFabric,
    PlanPartitions,
    VlArbPlan,
)
from ..policy import ROLES, load_policy
from ..policy.model import FabricSpec, Policy
from ..roles import Role
from .e2e_check import check_e2e
from .fixes import checked_fixes, refusal
from .sls import assign_sls, check_ipoib_sls
from .synth import Infeasible, RoleResult, synthesize
from .targets import RoleSpec, role_spec

__all__ = ["make_plan", "plan_and_analyze"]


def opensm_usable_entries(cap: int) -> int:
    """VLArb entries OpenSM 3.3.23 can program on a port of this capacity. It sends the second
    32-entry block with `cap % 32` entries (osm_qos.c vlarb_update), so a 64-entry table gets
    entries 0-31 only and 32-63 stay zero."""
    return cap if cap <= 32 else 32 + cap % 32


def make_plan(policy: Policy, cap: tuple[int, int] | None = None) -> Plan:
    f = policy.fabric
    high_cap, low_cap = cap if cap else (f.vlarb_cap.high, f.vlarb_cap.low)
    notes = []
    usable = (opensm_usable_entries(high_cap), opensm_usable_entries(low_cap))
    if usable != (high_cap, low_cap):
        notes.append(
            f"VLArb capacity {high_cap}/{low_cap}, planned with {usable[0]}/{usable[1]} "
            "entries: OpenSM 3.3.23 cannot program entries 32-63 of a 64-entry table"
        )
        high_cap, low_cap = usable
    sls, sl2class = assign_sls(policy)
    notes += check_ipoib_sls(policy, sls)  # before the synthesis: a mistake in the files is said at once
    results = synthesize_roles(policy, (high_cap, low_cap))
    e2e = check_e2e(policy, results, lambda p: _replan(p, (high_cap, low_cap)))
    vpc = f.vls_per_class
    terminal = role_spec(policy, "terminal", (high_cap, low_cap))
    classes = []
    for i, c in enumerate(policy.classes):
        classes.append(
            PlanClass(
                name=c.name,
                index=i,
                priority=c.priority,
                sls=sls[i],
                vls=[i * vpc + k for k in range(vpc)],
                default=c.default,
                bandwidth=Bandwidth(
                    requested=c.bandwidth,
                    target=round(terminal.classes[i].share, 6),
                    max=c.max_bandwidth,
                    planned=round(results["terminal"].per_class[c.name].share, 6),
                ),
                latency=Latency(
                    max_latency_us=c.max_latency_us,
                    max_distance=c.max_distance,
                    max_e2e_latency_us=c.max_e2e_latency_us,
                ),
                match=c.match.model_dump(mode="json"),
            )
        )
    analysis = {}
    for role, r in results.items():
        analysis[role] = {
            "engine": "exact",
            "mode": r.analysis.mode,
            "packet_bytes": r.analysis.packet_bytes,
            "per_class": {n: cr.to_dict() for n, cr in r.per_class.items()},
            "per_vl": {str(v): s.to_dict() for v, s in sorted(r.analysis.per_vl.items())},
        }
    return Plan(
        schema_=SCHEMA,
        policy_sha256=policy.sha256,
        policy_file=policy.source,
        fabric=PlanFabric(
            rate=f.rate,
            rate_gbps=f.rate_gbps,
            mtu=f.mtu,
            data_vls=f.data_vls,
            high_cap=high_cap,
            low_cap=low_cap,
            routing=f.routing,
            fault_tolerance=f.fault_tolerance,
            vls_per_class=vpc,
            classes_fit=_classes_fit(f),
            switch_latency_ns=f.switch_latency_ns,
            max_cable_m=f.max_cable_m,
            max_switch_hops=f.max_switch_hops,
        ),
        accounting=f.accounting,
        classes=classes,
        sl2class=sl2class,
        share_tolerance_pp=policy.verdict.share_tolerance_pp,
        vlarb=VlArbPlan(**{role: results[role].table for role in ROLES}),
        analysis=analysis,
        end_to_end=(
            EndToEndPlan(
                switch_hops=f.route_switch_hops or 0,
                per_class={n: e.to_dict() | {"meets": _meets(policy, n, e)} for n, e in e2e.items()},
            )
            if e2e is not None
            else None
        ),
        notes=notes,
        partitions=(
            PlanPartitions(file=policy.partitions_file.file, text=policy.partitions_file.text)
            if policy.partitions_file
            else None
        ),
    )


def synthesize_roles(policy: Policy, cap: tuple[int, int], suggest: bool = True) -> dict[str, RoleResult]:
    """Tables for every port role; an infeasible role is one InputError line, with the fixes
    that were planned and work (`suggest=False` while checking those fixes)."""
    results: dict[str, RoleResult] = {}
    cache: dict[RoleSpec, RoleResult] = {}
    for role in ROLES:
        spec = role_spec(policy, role, cap)
        if spec not in cache:
            try:
                cache[spec] = synthesize(spec)
            except Infeasible as e:
                raise _policy_error(policy, role, e, cap if suggest else None) from e
        results[role] = cache[spec]
    return results


def _replan(policy: Policy, cap: tuple[int, int]) -> None:
    """Plan without suggestions: raises when the policy is infeasible (checking a fix)."""
    check_e2e(policy, synthesize_roles(policy, cap, suggest=False))


def _meets(policy: Policy, name: str, e: EndToEnd) -> bool | None:
    want = next(c.max_e2e_latency_us for c in policy.classes if c.name == name)
    if want is None:
        return None
    return e.bound_us is not None and e.bound_us <= want + 1e-9


def _classes_fit(f: FabricSpec) -> dict[str, int]:
    """Classes that fit in the data VLs without and with dla's fault reservation."""
    if f.routing != "dla":
        return {"none": f.classes_fit("none")}
    return {"none": f.classes_fit("none"), "links": f.classes_fit("links")}


def _policy_error(policy: Policy, role: Role, e: Infeasible, cap: tuple[int, int] | None) -> InputError:
    v = e.violation
    differs = any(c.roles for c in policy.classes)
    where = f" on {role} ports" if differs else ""
    loc: tuple[str | int, ...]
    if v.target is None:
        loc = ("classes",)
        msg = f"infeasible{where}: {v.message}"
    else:
        c = policy.classes[v.target.index]
        field = v.field
        loc = ("classes", v.target.index, field)
        o = c.roles.get(role)
        if o is not None and getattr(o, field, None) is not None:
            loc = ("classes", v.target.index, "roles", role, field)
        msg = f"class {c.name!r}{where}: {v.message}"
    fixes = None if cap is None else checked_fixes(policy, v, loc, lambda p: _replan(p, cap))  # e2e bounds too
    return refusal(policy, msg, loc, fixes, "no single change to a priority or this bound makes it feasible")


def plan_and_analyze(policy_path: str | Path, cap: tuple[int, int] | None = None) -> Plan:
    """Load, validate, plan and analyse: the unit `make bench` times."""
    return make_plan(load_policy(policy_path), cap)
