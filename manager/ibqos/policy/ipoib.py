"""IPoIB's SL on each `ipoib` partition against the classes: the one check, run on a policy
being planned (planner) and on every plan read (plan.check), since a plan edited by hand or
written before carries its partitions file and classes as JSON.

A class that takes IPoIB on a partition (`ulps: [ipoib]`, or a `pkey:` rule naming it) gets
IPoIB's unicast path records on its SL from the QoS policy, but IPoIB's broadcast and
multicast groups are created by OpenSM on the SL of the partition's `sl=` flag (0 without
one), so they would run in another class. Each `ipoib` partition's sl= must be an SL of the
class that takes IPoIB there (the first in order; the default class where none does)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ..errors import InputError
from .model import Match
from .partitions import DEFAULT_PKEY, Partitions, pkey_range


class ClassSls(NamedTuple):
    """What the check needs of a class, from a policy and its assigned SLs or from a plan."""

    name: str
    match: Match
    sls: list[int]
    default: bool


def ipoib_catch(match: Match, pkey: int) -> str | None:
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


_HOW = {
    "all": "takes IPoIB on SL {}",
    "some": "takes IPoIB on SL {} for its port groups",
    "default": "takes IPoIB on SL {} as the default class (no rule matches the partition)",
}


def check_ipoib_broadcast(parts: Partitions, classes: Sequence[ClassSls]) -> None:
    """Raise an InputError naming the partitions file and the statement's line where an
    `ipoib` partition's broadcast SL is not an SL of the class that takes IPoIB there."""
    default = next(i for i, c in enumerate(classes) if c.default)
    class_of_sl = {sl: i for i, c in enumerate(classes) for sl in c.sls}
    for pkey, (sl, line) in sorted(parts.ipoib_sl.items()):
        takers = []  # (class, how it takes IPoIB here), in order up to the first that takes it all
        for i, c in enumerate(classes):
            catch = ipoib_catch(c.match, pkey)
            if catch:
                takers.append((i, catch))
            if catch == "all":
                break
        else:
            takers.append((default, "default"))
        broadcast = class_of_sl.get(sl or 0, default)
        for i, catch in takers:
            if i != broadcast:
                first = classes[i].sls[0]
                raise InputError(
                    f"partition {parts.pkeys[pkey]!r} ({pkey:#06x}) has OpenSM create IPoIB's "
                    f"broadcast group on SL {sl or 0}"
                    + (" (no sl= flag)" if sl is None else "")
                    + f", but class {classes[i].name!r} {_HOW[catch].format(first)}: IPoIB's broadcast"
                    f" and multicast would run in another class; add sl={first} to the partition's flags",
                    file=parts.file,
                    line=line,
                    field="partitions",
                )
