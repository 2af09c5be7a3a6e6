"""Semantic checks that need the whole policy. Each failure is one InputError line."""

from __future__ import annotations

from typing import NoReturn

from ..errors import InputError
from ..roles import ROLES
from ..vls import DATA_VL_COUNTS
from .model import Policy
from .yamlsrc import _dotted


def _fail(policy: Policy, loc: tuple[str | int, ...], message: str) -> NoReturn:
    file, line = policy.where(*loc)

    raise InputError(message, file=file, line=line, field=_dotted(loc) or None)


def _pct(x: float) -> str:
    """A share as written, to the 1e-9 the checks compare at: '{:g}' keeps 6 digits, and
    shares of 60 and 40.0000001 were said to 'add up to 100%, more than 100%'."""
    return f"{x:.9f}".rstrip("0").rstrip(".")


def check_policy(p: Policy) -> None:
    classes = p.classes
    names: dict[str, int] = {}
    for i, c in enumerate(classes):
        if c.name in names:
            _fail(p, ("classes", i, "name"), f"class {c.name!r} is defined twice (first as classes[{names[c.name]}])")
        names[c.name] = i

    defaults = [i for i, c in enumerate(classes) if c.default]
    if not defaults:
        _fail(p, ("classes",), "no class has `default: true`; exactly one class must take the traffic no rule matches")
    if len(defaults) > 1:
        _fail(
            p,
            ("classes", defaults[1], "default"),
            f"classes {classes[defaults[0]].name!r} "
            f"and {classes[defaults[1]].name!r} are both the default; exactly one may be",
        )

    for i, c in enumerate(classes):
        if c.max_bandwidth is not None and c.bandwidth != "rest" and c.max_bandwidth < c.bandwidth:
            _fail(
                p,
                ("classes", i, "max_bandwidth"),
                f"max_bandwidth {_pct(c.max_bandwidth)}% is below the guaranteed {_pct(c.bandwidth)}%",
            )

    if p.fabric.fault_tolerance == "links" and p.fabric.routing != "dla":
        _fail(
            p,
            ("fabric", "fault_tolerance"),
            f"fault_tolerance: links reserves dla's third VL "
            f"per class, but routing is {p.fabric.routing}; set routing: dla or "
            "fault_tolerance: none",
        )
    for i, c in enumerate(classes):
        if c.max_e2e_latency_us is not None and p.fabric.route_switch_hops is None:
            _fail(
                p,
                ("classes", i, "max_e2e_latency_us"),
                f"an end-to-end bound needs the route length: with routing {p.fabric.routing}, "
                "set fabric.max_switch_hops (switch-to-switch links on the longest route, "
                "0 for one switch)",
            )
    _check_class_count(p)

    owner: dict[int, str] = {}
    nsl = 0
    for i, c in enumerate(classes):
        for j, sl in enumerate(c.sls or []):
            if sl in owner:
                # one class listing it twice: 'by 'a' and 'a'' named no second class
                by = f"listed twice by {c.name!r}" if owner[sl] == c.name else f"by {owner[sl]!r} and {c.name!r}"
                _fail(p, ("classes", i, "sls", j), f"SL {sl} is used twice ({by})")
            owner[sl] = c.name
        nsl += len(c.sls or []) or 1
    if nsl > 16:
        _fail(p, ("classes",), f"the classes need {nsl} SLs but there are 16")

    groups: dict[str, str] = {}
    for i, c in enumerate(classes):
        for j, g in enumerate(c.match.groups):
            if g.name in groups:
                _fail(
                    p,
                    ("classes", i, "match", "groups", j, "name"),
                    f"port group {g.name!r} is defined twice (in {groups[g.name]!r} and {c.name!r})",
                )
            groups[g.name] = c.name
        if c.match.direction != "either" and not c.match.groups:
            _fail(p, ("classes", i, "match", "direction"), "direction needs port groups")

    for role in ROLES:
        _check_shares(p, role)


def _check_class_count(p: Policy) -> None:
    f = p.fabric
    n, vpc, fit = len(p.classes), f.vls_per_class, f.classes_fit()
    if n <= fit:
        return
    if f.fault_tolerance == "links":
        why = "dla with fault_tolerance: links uses 3 VLs per class"
    elif vpc > 1:
        why = f"{f.routing} uses {vpc} VLs per class"
    else:
        why = "one VL per class"
    fixes: list[str] = [f"merge classes down to {fit}"] if fit else []
    wider = next((d for d in DATA_VL_COUNTS if d > f.data_vls and d // vpc >= n), None)
    if wider:
        fixes.append(f"raise fabric.data_vls to {wider} (if your ports run that many)")
    if f.fault_tolerance == "links" and f.classes_fit("none") >= n:
        fixes.append(
            f"set fabric.fault_tolerance: none ({f.classes_fit('none')} fit, "
            "but dla then has no spare VL to route around a fault)"
        )
    _fail(
        p, ("classes", fit), f"{n} classes but only {fit} fit on {f.data_vls} data VLs ({why}); " + "; or ".join(fixes)
    )


def _share_loc(p: Policy, i: int, role: str) -> tuple[str | int, ...]:
    """Where class i's share for `role` is written: its role override, else its bandwidth."""
    o = p.classes[i].roles.get(role)  # type: ignore[call-overload]  # role: any role name
    if o is not None and o.bandwidth is not None:
        return ("classes", i, "roles", role, "bandwidth")
    return ("classes", i, "bandwidth")


def _check_shares(p: Policy, role: str) -> None:
    fixed, rest, numbered = 0.0, [], []
    for i, c in enumerate(p.classes):
        bw = c.bounds(role)[0]
        if bw == "rest":
            rest.append(i)
        else:
            fixed += bw
            numbered.append(i)
    where = f" on {role} ports" if any(c.roles for c in p.classes) else ""
    last = ("classes", len(p.classes) - 1, "bandwidth")
    if fixed > 100 + 1e-9:
        _fail(
            p,
            _share_loc(p, numbered[-1], role),  # where the sum passed 100, never a `rest`
            f"guaranteed shares add up to {_pct(fixed)}%{where}, more than 100%; "
            f"lower them by {_pct(fixed - 100)} points",
        )
    if rest and fixed > 100 - 1.0 + 1e-9:
        _fail(
            p,
            ("classes", rest[0], "bandwidth"),
            f"'rest' would get {_pct(100 - fixed)}%{where}: "
            "the guaranteed shares leave less than 1% for the 'rest' classes",
        )
    if not rest and fixed < 100 - 0.01:
        _fail(
            p,
            last,
            f"guaranteed shares add up to {_pct(fixed)}%{where} and no class takes "
            f"'rest': give the remaining {_pct(100 - fixed)}% to a class (bandwidth: rest)",
        )
