"""Fixes for an infeasible policy, each one planned before it is offered.

An admin who reads "feasible with classes[0].priority (mpi): low" must be able to make that one change and
get a plan. So every candidate is applied to a copy of the policy, validated as the loader
validates, and planned for the same VLArb capacity; only the ones that plan are printed.

Candidates, in the order they are offered:
1. what the violation itself proposes (the bound the best table reached, or a share moved
   between the tables), at the violated field or the location it names;
2. the violating class, or else each class, in the other priority table.

Only changes the rendered configuration enforces and the verification checks are offered. A
smaller `fabric.mtu` is not one of them: OpenSM 3.3.23 sets every link's NeighborMTU to the
smaller MTUCap of its ends and has no option to lower it, and the rendered qos-levels'
`mtu-limit` only caps the MTU of the SA's path records, which a ULP may ignore (ib_send_bw -m).
Packets larger than the plan's MTU would then cross links whose tables were planned for
smaller ones; the dry run, apply and status check only that no link runs below the plan's MTU.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..errors import InputError
from ..policy.check import check_policy
from ..policy.model import Policy
from ..policy.yamlsrc import _dotted

if TYPE_CHECKING:
    from .synth import Violation

Location = tuple[str | int, ...]  # as Policy.where takes it: ("classes", 1, "priority")

MAX_CHECKS = 12  # candidates planned at most, per error
MAX_SECONDS = 10.0  # and wall time spent planning them
MAX_OFFERED = 3


@dataclass(frozen=True)
class Fix:
    loc: Location
    value: object

    def text(self, policy: Policy) -> str:
        label = _dotted(self.loc)
        if len(self.loc) > 2 and self.loc[0] == "classes" and isinstance(i := self.loc[1], int):
            label += f" ({policy.classes[i].name})"
        return f"{label}: {self.value}"


def candidates(policy: Policy, violation: Violation, loc: Location) -> list[Fix]:
    out = [Fix(loc if where is None else where, value) for where, value in violation.fixes]
    target = violation.target.index if violation.target is not None else None
    order = [target] if target is not None else range(len(policy.classes))
    for i in order:
        other = "low" if policy.classes[i].priority == "high" else "high"
        out.append(Fix(("classes", i, "priority"), other))
    return list(dict.fromkeys(out))


def checked_fixes(policy: Policy, violation: Violation, loc: Location, plans: Callable[[Policy], object]) -> list[Fix]:
    """The candidates with which `plans(policy)` succeeds (it raises on an infeasible one)."""
    offered: list[Fix] = []
    t0 = time.monotonic()
    for n, fix in enumerate(candidates(policy, violation, loc)):
        if n >= MAX_CHECKS or time.monotonic() - t0 > MAX_SECONDS or len(offered) >= MAX_OFFERED:
            break
        changed = _with(policy, fix)
        if changed is None:
            continue
        try:
            plans(changed)
        except Exception:  # noqa: BLE001 - any refusal means the fix does not work
            continue
        offered.append(fix)
    return offered


def refusal(policy: Policy, msg: str, loc: Location, offered: list[Fix] | None, none_works: str) -> InputError:
    """The one-line error at the policy's `loc`: `msg`, then the fixes that plan (None: none
    were looked for), or `none_works` when none does."""
    if offered is not None:
        msg += "; feasible with " + " | ".join(f.text(policy) for f in offered) if offered else "; " + none_works
    file, line = policy.where(*loc)
    return InputError(msg, file=file, line=line, field=_dotted(loc))


def _with(policy: Policy, fix: Fix) -> Policy | None:
    """A validated copy of `policy` with one field changed, or None if the change is invalid."""
    doc = policy.model_dump(mode="json", exclude_unset=True)
    node: Any = doc  # a JSON document: dicts and lists, keys and indexes as loc has them
    for key in fix.loc[:-1]:
        node = node.setdefault(key, {}) if isinstance(key, str) else node[key]
    node[fix.loc[-1]] = fix.value
    try:
        changed = Policy.model_validate(doc)
        check_policy(changed)
    except (ValidationError, InputError):
        return None
    return changed
