"""Service levels: each class keeps the SLs it names, the others get the lowest free SL, and
every SL nobody claimed goes to the default class (so no SL is left on an unplanned VL)."""

from __future__ import annotations

from ..errors import InputError
from ..policy.model import Policy
from ..policy.partitions import DEFAULT_PKEY


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
    """A class that takes IPoIB (`ulps: [ipoib]`) gets its unicast path records on its SL from
    the QoS policy, but IPoIB's broadcast and multicast groups are created by OpenSM on the
    SL of the partition's `sl=` flag (0 without one), so they would run in another class.
    With the policy's partitions file, each such partition must say the class's SL; without
    one, the SM's own file decides, and the plan says so (the notes returned)."""
    parts = policy.partitions_file
    notes = []
    for i, c in enumerate(policy.classes):
        for u in c.match.ulps:
            if u.ulp != "ipoib":
                continue
            if parts is None:
                if sls[i][0] != 0:
                    notes.append(
                        f"class {c.name!r} takes IPoIB on SL {sls[i][0]}, but IPoIB's broadcast group is on its "
                        "partition's sl= (OpenSM's partitions file, 0 without one): give that partition "
                        f"sl={sls[i][0]}, or the policy a partitions: file, which ibqos checks"
                    )
                continue
            pkey = (int(u.pkey, 0) if isinstance(u.pkey, str) else u.pkey) if u.pkey is not None else DEFAULT_PKEY
            got = parts.ipoib_sl.get(pkey & 0x7FFF)
            if got is not None and (got[0] or 0) != sls[i][0]:
                sl, line = got
                raise InputError(
                    f"partition {parts.pkeys[pkey & 0x7FFF]!r} ({pkey & 0x7FFF:#06x}) has OpenSM create IPoIB's "
                    f"broadcast group on SL {sl or 0}"
                    + (" (no sl= flag)" if sl is None else "")
                    + f", but class {c.name!r} takes IPoIB on SL {sls[i][0]}: IPoIB's broadcast and multicast "
                    f"would run in another class; add sl={sls[i][0]} to the partition's flags",
                    file=parts.file,
                    line=line,
                    field="partitions",
                )
    return notes
