"""What a plan's schema cannot say: that its parts agree with each other. A plan edited by
hand or written by another version may parse and still name a VL past `data_vls`, a table
longer than the ports hold, an SL in two classes or a class that does not exist; render,
analyze and the testbed would then fail deep inside (or program nonsense). Each finding is
one InputError naming the file, the line and the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic

from ..arbiter.rates import rate_gbps
from ..arbiter.table import MAX_CAP, MAX_WEIGHT
from ..docfile import JsonDoc, error_message
from ..errors import InputError
from ..fabric.check import MAX_PORTS
from ..policy.ipoib import ClassSls, check_ipoib_broadcast
from ..policy.load import undefined_pkey
from ..policy.model import Match
from ..policy.partitions import Partitions, partitions_of
from ..roles import ROLES
from ..vls import vlcap_code
from .model import Plan


def check_plan(plan: Plan, path: str | Path, text: str | None = None) -> None:
    """Raise the first inconsistency as an InputError; on a consistent plan, return with each
    class's match in its canonical form."""
    w = JsonDoc(path, text)
    f = plan.fabric
    try:
        vlcap_code(f.data_vls)
    except ValueError as e:
        raise w.error(str(e), "fabric", "data_vls") from None
    for cap in ("high_cap", "low_cap"):
        if not 1 <= getattr(f, cap) <= MAX_CAP:
            raise w.error(f"{getattr(f, cap)} entries: a VLArb table holds 1 to {MAX_CAP}", "fabric", cap)
    try:
        # as a policy's rate is read: a rate no InfiniBand port has (1e-300, a unit slip) made
        # every time on the wire nonsense, where only 0 and below were refused
        rate_gbps(f.rate_gbps)
    except ValueError as e:
        raise w.error(str(e), "fabric", "rate_gbps") from None
    if f.vls_per_class is not None and not 1 <= f.vls_per_class <= 3:
        raise w.error(f"{f.vls_per_class} VLs per class: ibqos plans 1 to 3", "fabric", "vls_per_class")
    _check_classes(plan, w)
    _check_partitions(plan, w)
    _check_vlarb(plan, w)
    _check_analysis(plan.analysis, w)


def _check_partitions(plan: Plan, w: JsonDoc) -> None:
    """The partitions file a plan carries, as the policy's is checked when it is loaded: it is
    rendered and applied as it is (an edit OpenSM cannot parse left every partition out)."""
    if plan.partitions is None:
        return
    try:
        parts = partitions_of(plan.partitions.text, Path(plan.partitions.file))
    except InputError as e:
        raise w.error(str(e), "partitions", "text") from e
    found = undefined_pkey(parts, [Match.model_validate(c.match) for c in plan.classes])
    if found:
        raise w.error(found[1], *found[0])
    try:
        check_ipoib_of(plan, parts)
    except InputError as e:
        raise w.error(str(e), "partitions", "text") from e


def check_ipoib_of(plan: Plan, parts: Partitions) -> None:
    """`parts` (the plan's own, or the SM's file a plan without one leaves in force) against
    the plan's classes: policy.ipoib's check, an InputError naming the partition's line."""
    classes = [ClassSls(c.name, Match.model_validate(c.match), c.sls, c.default) for c in plan.classes]
    check_ipoib_broadcast(parts, classes)


def _check_classes(plan: Plan, w: JsonDoc) -> None:
    names: dict[str, int] = {}
    indexes: dict[int, int] = {}
    sl_owner: dict[int, str] = {}
    data_vls = plan.fabric.data_vls
    for i, c in enumerate(plan.classes):
        if c.name in names:
            raise w.error(f"class name {c.name!r} is also classes[{names[c.name]}]'s", "classes", i, "name")
        names[c.name] = i
        if c.index in indexes:
            raise w.error(f"index {c.index} is also classes[{indexes[c.index]}]'s", "classes", i, "index")
        indexes[c.index] = i
        for k, sl in enumerate(c.sls):
            if sl in sl_owner:
                raise w.error(f"SL {sl} is in both class {sl_owner[sl]!r} and {c.name!r}", "classes", i, "sls", k)
            sl_owner[sl] = c.name
        if not c.vls:
            raise w.error("a class needs at least one VL", "classes", i, "vls")
        for k, vl in enumerate(c.vls):
            if not 0 <= vl < data_vls:
                raise w.error(f"VL {vl} outside the data VLs 0..{data_vls - 1}", "classes", i, "vls", k)
        try:
            # as the planner wrote it: the policy's Match, dumped (so render reads lists of
            # canonical strings, whatever shorthand a hand edit used)
            c.match = Match.model_validate(c.match).model_dump(mode="json")
        except pydantic.ValidationError as e:
            err = e.errors()[0]
            raise w.error(error_message(err), "classes", i, "match", *err["loc"]) from e
    defaults = [i for i, c in enumerate(plan.classes) if c.default]
    if not defaults:
        raise w.error("no class is the default (one must be: it takes the SLs no class lists)", "classes")
    if len(defaults) > 1:
        first = plan.classes[defaults[0]].name
        raise w.error(
            f"class {plan.classes[defaults[1]].name!r} is a second default, beside {first!r}",
            "classes",
            defaults[1],
            "default",
        )
    for sl, k in enumerate(plan.sl2class):
        if k not in indexes:
            raise w.error(f"SL {sl} maps to class index {k}, which no class has", "sl2class", sl)
        # as the planner assigns them (planner/sls.py): a class's SLs are the ones it lists,
        # and only the default class also takes the SLs nobody lists
        c = plan.classes[indexes[k]]
        if not c.default and sl not in c.sls:
            raise w.error(
                f"SL {sl} maps to class {c.name!r} (index {k}), whose sls {c.sls} do not list it; "
                "only the default class takes SLs it does not list",
                "sl2class",
                sl,
            )
    for c in plan.classes:
        for sl in c.sls:
            if plan.sl2class[sl] != c.index:
                raise w.error(
                    f"SL {sl} of class {c.name!r} maps to class index {plan.sl2class[sl]}, not {c.index}",
                    "sl2class",
                    sl,
                )


def _check_vlarb(plan: Plan, w: JsonDoc) -> None:
    """The table type checks each entry's VL (0..14) and weight (0..255); this checks them
    against the plan's own fabric: VLs it has, and no more entries than its ports hold."""
    f = plan.fabric
    tables: list[tuple[tuple[str | int, ...], Any]] = [(("vlarb", r), plan.vlarb.role(r)) for r in ROLES]
    for k, o in enumerate(plan.vlarb.ports):
        tables.append((("vlarb", "ports", k), o.table))
        try:
            int(o.guid, 16)
        except ValueError:
            raise w.error(f"{o.guid!r} is not a hex GUID", "vlarb", "ports", k, "guid") from None
        if not 0 <= o.port <= MAX_PORTS:
            raise w.error(f"port {o.port} outside 0..{MAX_PORTS}", "vlarb", "ports", k, "port")
    for where, t in tables:
        for which, cap in (("high", f.high_cap), ("low", f.low_cap)):
            entries = getattr(t, which)
            if len(entries) > cap:
                raise w.error(f"{len(entries)} entries, more than the {cap} the ports hold", *where, which)
            for n, (vl, weight) in enumerate(entries):
                if not 0 <= vl < f.data_vls:
                    raise w.error(f"VL {vl} outside the data VLs 0..{f.data_vls - 1}", *where, which, n, 0)
                if not 0 <= weight <= MAX_WEIGHT:
                    raise w.error(f"weight {weight} outside 0..{MAX_WEIGHT}", *where, which, n, 1)
        # a VL with no entry of weight above 0 in either table is never sent from these ports
        # (IBA 7.6.9: an entry of weight 0 is skipped), and its class's packets wait there until
        # the switch's lifetime limit drops them
        served = {vl for vl, weight in (*t.high, *t.low) if weight > 0}
        for c in plan.classes:
            if unserved := [vl for vl in c.vls if vl not in served]:
                raise w.error(
                    f"class {c.name!r}: VL {unserved[0]} has no entry of weight above 0 in the high or the low "
                    "table: its traffic would never be sent from these ports",
                    *where,
                )


def _check_analysis(analysis: dict[str, dict[str, Any]], w: JsonDoc) -> None:
    """Only the part others read: per_class[name].share, a percentage (testbed's prediction)."""
    for role, doc in analysis.items():
        per_class = doc.get("per_class")
        if per_class is None:
            continue
        if not isinstance(per_class, dict):
            raise w.error("want an object of class name -> analysis", "analysis", role, "per_class")
        for name, entry in per_class.items():
            share = entry.get("share", 0) if isinstance(entry, dict) else None
            if not (isinstance(share, (int, float)) and not isinstance(share, bool) and 0 <= share <= 100):
                raise w.error(
                    f"want an object with share, a percentage; got {entry!r:.60}", "analysis", role, "per_class", name
                )
