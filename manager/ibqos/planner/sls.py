"""Service levels: each class keeps the SLs it names, the others get the lowest free SL, and
every SL nobody claimed goes to the default class (so no SL is left on an unplanned VL)."""

from __future__ import annotations

from ..policy.model import Policy


def assign_sls(policy: Policy) -> tuple[list[list[int]], list[int]]:
    """(SLs per class in policy order, sl2class for SL 0..15)."""
    taken = {sl for c in policy.classes for sl in (c.sls or [])}
    free = [sl for sl in range(16) if sl not in taken]
    default = next(i for i, c in enumerate(policy.classes) if c.default)
    per_class: list[list[int]] = [list(c.sls or []) for c in policy.classes]
    # The default class first, so that it gets SL 0 (what unconfigured hosts use) if free.
    for i in [default] + [i for i in range(len(policy.classes)) if i != default]:
        if not per_class[i]:
            per_class[i] = [free.pop(0)]
    sl2class = [default] * 16
    for i, sls in enumerate(per_class):
        for sl in sls:
            sl2class[sl] = i
    return per_class, sl2class
