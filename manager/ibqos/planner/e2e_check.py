"""The end-to-end bound of every class from the planned roles, and the check of the policy's
`max_e2e_latency_us` against it (refused like an unreachable `max_latency_us`: the class,
the field's line, by how much, and only fixes that were planned and work)."""

from __future__ import annotations

import math
from collections.abc import Callable

from ..arbiter.e2e import EndToEnd, describe_route, end_to_end_on
from ..errors import InputError
from ..policy.model import Policy
from .fixes import checked_fixes, refusal
from .synth import FixOffer, RoleResult, Violation
from .targets import role_spec


def e2e_bounds(policy: Policy, results: dict[str, RoleResult]) -> dict[str, EndToEnd] | None:
    """Per class, on the worst route of the policy's routing (None: no route length known)."""
    f = policy.fabric
    hops = f.route_switch_hops
    if hops is None:
        return None
    out: dict[str, EndToEnd] = {}
    for c in policy.classes:

        def wait_us(role: str, name: str = c.name) -> float | None:
            return results[role].per_class[name].worst_wait_us

        out[c.name] = end_to_end_on(f, wait_us, hops)
    return out


def check_e2e(
    policy: Policy, results: dict[str, RoleResult], replan: Callable[[Policy], object] | None = None
) -> dict[str, EndToEnd] | None:
    """The bounds; an InputError for the first class whose bound exceeds its
    max_e2e_latency_us, with the fixes `replan(policy)` accepts (none offered without it)."""
    bounds = e2e_bounds(policy, results)
    if bounds is None:
        return None
    for i, c in enumerate(policy.classes):
        want = c.max_e2e_latency_us
        e = bounds[c.name]
        if want is None or (e.bound_us is not None and e.bound_us <= want + 1e-9):
            continue
        raise _e2e_error(policy, i, e, replan)
    return bounds


def _e2e_error(policy: Policy, i: int, e: EndToEnd, replan: Callable[[Policy], object] | None) -> InputError:
    c = policy.classes[i]
    want = c.max_e2e_latency_us
    assert want is not None
    fixed = e.serialization_us + e.wire_us + e.switch_us
    got = "unbounded (a port on the route never serves it)" if e.bound_us is None else f"{e.bound_us:.2f} µs"
    msg = (
        f"class {c.name!r}: end-to-end bound {got} exceeds max_e2e_latency_us {want:g} µs on the route "
        f"{describe_route(e)}: arbitration waits "
        + ("unbounded" if e.wait_us is None else f"{e.wait_us:.2f} µs")
        + f" + serialization {e.serialization_us:.2f} + wire {e.wire_us:.2f} + switches {e.switch_us:.2f} µs"
    )
    if fixed >= want:
        msg += f" (serialization, wire and switches alone take {fixed:.2f} µs)"
    loc = ("classes", i, "max_e2e_latency_us")
    offered = None
    if replan is not None:
        fixes: list[FixOffer] = []
        if e.bound_us is not None:
            fixes.append((None, math.ceil(e.bound_us * 100) / 100))
        per_port = math.floor((want - fixed) / len(e.ports) * 100) / 100
        if per_port > 0 and (c.max_latency_us is None or per_port < c.max_latency_us):
            # every port's wait within its share of what is left after the fixed part
            fixes.append((("classes", i, "max_latency_us"), per_port))
        target = role_spec(policy, "terminal").classes[i]
        violation = Violation(target, "max_e2e_latency_us", msg, 1.0, tuple(fixes))
        offered = checked_fixes(policy, violation, loc, replan)
    return refusal(
        policy,
        msg,
        loc,
        offered,
        "no single change to this bound, the per-port bound or a priority makes it feasible",
    )
