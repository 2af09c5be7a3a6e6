"""The few fields of a plan document (schema ibqos.plan/1) that the testbed needs.

Only these are read: classes[].name/sls/priority, fabric.rate/rate_gbps/mtu and the predicted
share of each class at the switch port facing the receiving CA,
analysis["terminal"]["per_class"][name]["share"] (the two-node method measures that port).
The planner's model (ibqos.plan.load_plan, strict) reads and validates the document, SLs
0..15, each in one class, and the MTUs perftest's -m accepts included.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ibqos import plan as plan_doc
from ibqos.errors import InputError
from ibqos.inputfile import read_bytes


@dataclass(frozen=True)
class TrafficClass:
    name: str
    sls: tuple[int, ...]
    priority: str  # "high" | "low"
    predicted_share: float | None  # percent of the link, None when the plan has no analysis


@dataclass(frozen=True)
class PlanSummary:
    path: str
    sha256: str
    rate: str
    rate_gbps: float | None
    mtu: int
    classes: tuple[TrafficClass, ...]
    share_tolerance_pp: float = 2.0  # the policy's verdict tolerance, carried by the plan

    @property
    def sls(self) -> list[int]:
        return [sl for c in self.classes for sl in c.sls]


def load_plan(path: str | Path) -> PlanSummary:
    path = Path(path)
    raw = read_bytes(path)
    plan = plan_doc.load_plan(path)  # the planner's own model checks SLs (each in one class), MTU and classes
    per_class = (plan.analysis.get("terminal") or {}).get("per_class") or {}
    classes = tuple(
        TrafficClass(c.name, tuple(c.sls), c.priority, _share(per_class.get(c.name), path, c.name))
        for c in plan.classes
    )
    return PlanSummary(
        path=str(path),
        sha256=hashlib.sha256(raw).hexdigest(),
        rate=str(plan.fabric.rate),
        rate_gbps=plan.fabric.rate_gbps,
        mtu=plan.fabric.mtu,
        classes=classes,
        share_tolerance_pp=plan.share_tolerance_pp,
    )


def _share(entry, path: Path, name: str) -> float | None:
    if entry is None:
        return None
    share = entry.get("share") if isinstance(entry, dict) else None
    if not isinstance(share, (int, float)) or not 0 <= share <= 100:
        raise InputError(
            f"share must be a percentage, got {share!r}", file=path, field=f"analysis.terminal.per_class.{name}.share"
        )
    return float(share)
