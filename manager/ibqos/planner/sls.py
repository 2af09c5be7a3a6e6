"""Service levels: each class keeps the SLs it names, the others get the lowest free SL, and
every SL nobody claimed goes to the default class (so no SL is left on an unplanned VL)."""

from __future__ import annotations

from ..errors import InputError
from ..policy.model import Match, Policy
from ..policy.partitions import DEFAULT_PKEY, pkey_range


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


def _ipoib_catch(match: Match, pkey: int) -> str | None:
    """How a class's rules catch IPoIB's unicast path queries on a partition (15-bit P_Key):
    "all" of them, "some" (a rule that also names port groups), or None. IPoIB asks the SA with
    the partition's P_Key and neither a service ID nor a QoS class, and OpenSM's `ipoib` ULP is
    itself a P_Key match, so a plain `pkey:` rule catches IPoIB there as `ulps: [ipoib]` does."""
    for u in match.ulps:
        if u.ulp in ("ipoib", "any") and (u.pkey is not None or u.ulp == "ipoib"):
            keys = pkey_range(str(u.pkey)) if u.pkey is not None else range(DEFAULT_PKEY, DEFAULT_PKEY + 1)
            if any(k & 0x7FFF == pkey for k in keys):
                return "all"
    if match.service_id or match.qos_class:
        return None
    if any(k & 0x7FFF == pkey for text in match.pkey for k in pkey_range(str(text))):
        return "some" if match.groups else "all"
    return None


def check_ipoib_sls(policy: Policy, sls: list[list[int]]) -> list[str]:
    """A class that takes IPoIB on a partition (`ulps: [ipoib]`, or a `pkey:` rule naming it)
    gets IPoIB's unicast path records on its SL from the QoS policy, but IPoIB's broadcast and
    multicast groups are created by OpenSM on the SL of the partition's `sl=` flag (0 without
    one), so they would run in another class. With the policy's partitions file, each `ipoib`
    partition's sl= must be an SL of the class that takes IPoIB there (the first in policy
    order; the default class where none does); without one, the SM's own file decides, and
    the plan says so (the notes returned)."""
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
    default = next(i for i, c in enumerate(policy.classes) if c.default)
    class_of_sl = {sl: i for i, class_sls in enumerate(sls) for sl in class_sls}
    how = {
        "all": "takes IPoIB on SL {}",
        "some": "takes IPoIB on SL {} for its port groups",
        "default": "takes IPoIB on SL {} as the default class (no rule matches the partition)",
    }
    for pkey, (sl, line) in sorted(parts.ipoib_sl.items()):
        takers = []  # (class, how it takes IPoIB here), in policy order up to the first that takes it all
        for i, c in enumerate(policy.classes):
            catch = _ipoib_catch(c.match, pkey)
            if catch:
                takers.append((i, catch))
            if catch == "all":
                break
        else:
            takers.append((default, "default"))
        broadcast = class_of_sl.get(sl or 0, default)
        for i, catch in takers:
            if i != broadcast:
                raise InputError(
                    f"partition {parts.pkeys[pkey]!r} ({pkey:#06x}) has OpenSM create IPoIB's "
                    f"broadcast group on SL {sl or 0}"
                    + (" (no sl= flag)" if sl is None else "")
                    + f", but class {policy.classes[i].name!r} {how[catch].format(sls[i][0])}: IPoIB's broadcast"
                    f" and multicast would run in another class; add sl={sls[i][0]} to the partition's flags",
                    file=parts.file,
                    line=line,
                    field="partitions",
                )
    return notes
