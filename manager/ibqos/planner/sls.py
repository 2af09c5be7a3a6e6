"""Service levels: each class keeps the SLs it names, the others get the lowest free SL, and
every SL nobody claimed goes to the default class (so no SL is left on an unplanned VL)."""

from __future__ import annotations

from ..policy.ipoib import ClassSls, check_ipoib_broadcast
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


def check_ipoib_sls(policy: Policy, sls: list[list[int]]) -> list[str]:
    """IPoIB's broadcast SL against the classes (policy.ipoib) with the policy's partitions
    file; without one, the SM's own file decides, and the plan says so (the notes returned)."""
    parts = policy.partitions_file
    notes = []
    if parts is None:
        for i, c in enumerate(policy.classes):
            if any(u.ulp == "ipoib" for u in c.match.ulps) and sls[i][0] != 0:
                notes.append(
                    f"class {c.name!r} takes IPoIB on SL {sls[i][0]}, but IPoIB's broadcast group is on its "
                    "partition's sl= (OpenSM's partitions file, 0 without one): give that partition "
                    f"sl={sls[i][0]}, or the policy a partitions: file, which ibqos checks"
                )
        return notes
    check_ipoib_broadcast(parts, [ClassSls(c.name, c.match, sls[i], c.default) for i, c in enumerate(policy.classes)])
    return notes
