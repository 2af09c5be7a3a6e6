"""The dragonfly groups a fabric is programmed with, for the checker (docs/groups.md, "Which
groups the checker uses").

dla says which groups it routed with in its record (`ibqos-dla.json`); those are the groups
the tables follow, including an admin's pinned groups or a map dla kept through a fault. The
checker takes them, and derives its own (ibqos.fabric.groups, the same spec) only to
cross-check: a record whose partition breaks the spec's rules is a finding of its own
(`broken`), a valid one that differs from the checker's is said once (`disagreement`), never
as a difference on every port. Without a record the checker's own partition is used.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .dla_record import RECORD_FILE, DlaRecord, read_record
from .groups import NotADragonfly, Partition, find_groups, switch_graph, usable
from .model import Fabric


@dataclass(frozen=True)
class GroupsInForce:
    groups: dict[int, int]  # switch GUID -> group
    degraded: bool  # not an exact partition: dla's VL levels may move within a class
    source: str  # "dla's record (discovered)" / "the checker's discovery"
    disagreement: str | None = None  # the checker's own partition differs (one line)
    broken: str | None = None  # the record's partition breaks a rule of the spec


def _members(groups: dict[int, int]) -> set[frozenset[int]]:
    out: dict[int, set[int]] = {}
    for s, g in groups.items():
        out.setdefault(g, set()).add(s)
    return {frozenset(m) for m in out.values()}


def _sizes(groups: set[frozenset[int]]) -> str:
    return ",".join(map(str, sorted((len(m) for m in groups), reverse=True)))


def groups_in_force(fabric: Fabric, record: DlaRecord | None) -> GroupsInForce:
    """The record's groups when it has them (cross-checked), else the checker's own.
    Raises NotADragonfly when there is no record and no partition."""
    try:
        mine: Partition | None = find_groups(fabric)
        why = ""
    except NotADragonfly as e:
        mine, why = None, str(e)
    if record is None or record.refused or record.groups is None:
        if mine is None:
            raise NotADragonfly(why)
        return GroupsInForce(mine.groups, not mine.exact, "the checker's discovery")
    switches = {n.guid for n in fabric.switches()}
    theirs: dict[int, int] = {}
    for members in record.groups.members:
        number = len(set(theirs.values()))  # numbered 0.. over the groups on this fabric
        theirs.update({guid: number for guid in members if guid in switches})
    source = f"dla's record ({record.groups.source})"
    missing = sorted(switches - theirs.keys())
    if missing:  # a record of another fabric, or of before a switch was added
        broken: str | None = (
            f"dla's record has no group for switch {hex(missing[0])} ({len(missing)} switch(es) missing)"
        )
        if mine is None:
            raise NotADragonfly(f"{broken}; and {why}")
        return GroupsInForce(mine.groups, not mine.exact, "the checker's discovery", broken=broken)
    degraded = "degraded" in record.groups.source or (mine is not None and not mine.exact)
    rule = usable(switch_graph(fabric), theirs)
    broken = f"dla's groups ({record.groups.source}) break a rule: {rule}" if rule else None
    disagreement = None
    if mine is None:
        disagreement = f"the checker finds no partition ({why}); dla routed with groups of {_sizes(_members(theirs))}"
    elif _members(mine.groups) != _members(theirs):
        disagreement = (
            f"the checker's discovery finds groups of {_sizes(_members(mine.groups))}, dla's record "
            f"({record.groups.source}) groups of {_sizes(_members(theirs))}: roles follow dla's"
        )
    return GroupsInForce(theirs, degraded, source, disagreement, broken)


def record_in(dumps: Path, since: float | None = None) -> DlaRecord | None:
    """The record in `dumps` when it was written at or after `since` (a time.time())."""
    try:
        written = os.stat(dumps / RECORD_FILE).st_mtime
    except OSError:
        return None
    if since is not None and written < since:
        return None
    return read_record(dumps)
