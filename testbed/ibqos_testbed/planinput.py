"""The few fields of a plan document (schema ibqos.plan/1) that the testbed needs.

Only these are read: classes[].name/sls/priority, fabric.rate/rate_gbps/mtu and the predicted
share of each class at the switch port facing the receiving CA,
analysis["terminal"]["per_class"][name]["share"] (the two-node method measures that port).
The planner's model (ibqos.plan.Plan.load) reads and validates the document, so a bad plan
gets the planner's error; this view adds what perftest needs (SLs 0..15 used once, an MTU
perftest's -m accepts).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ibqos.errors import InputError
from ibqos.inputfile import read_bytes
from ibqos.plan import Plan

MTUS = (256, 512, 1024, 2048, 4096)


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


class _Class(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str = Field(min_length=1)
    sls: list[int] = Field(min_length=1)
    priority: Literal["high", "low"]

    @field_validator("sls")
    @classmethod
    def _sl_range(cls, v: list[int]) -> list[int]:
        bad = [s for s in v if not 0 <= s <= 15]
        if bad:
            raise ValueError(f"SL {bad[0]} is outside 0..15")
        return v


class _Fabric(BaseModel):
    model_config = ConfigDict(extra="ignore")
    rate: str | float
    rate_gbps: float | None = None
    mtu: int

    @field_validator("mtu")
    @classmethod
    def _mtu(cls, v: int) -> int:
        if v not in MTUS:
            raise ValueError(f"MTU {v} is not one of {', '.join(map(str, MTUS))}")
        return v


class _PlanView(BaseModel):
    model_config = ConfigDict(extra="ignore")
    fabric: _Fabric
    classes: list[_Class] = Field(min_length=1)
    analysis: dict = Field(default_factory=dict)


def load_plan(path: str | Path) -> PlanSummary:
    path = Path(path)
    raw = read_bytes(path)
    doc = Plan.load(path).model_dump(mode="json", by_alias=True)
    try:
        view = _PlanView.model_validate(doc)
    except ValidationError as e:
        err = e.errors()[0]
        raise InputError(err["msg"], file=path, field=".".join(str(p) for p in err["loc"]) or None) from e
    seen: dict[int, str] = {}
    for i, c in enumerate(view.classes):
        for sl in c.sls:
            if sl in seen:
                raise InputError(
                    f"SL {sl} is in both class {seen[sl]!r} and {c.name!r}", file=path, field=f"classes.{i}.sls"
                )
            seen[sl] = c.name
    per_class = (view.analysis.get("terminal") or {}).get("per_class") or {}
    classes = tuple(
        TrafficClass(c.name, tuple(c.sls), c.priority, _share(per_class.get(c.name), path, c.name))
        for c in view.classes
    )
    return PlanSummary(
        path=str(path),
        sha256=hashlib.sha256(raw).hexdigest(),
        rate=str(view.fabric.rate),
        rate_gbps=view.fabric.rate_gbps,
        mtu=view.fabric.mtu,
        classes=classes,
        share_tolerance_pp=float(doc.get("share_tolerance_pp", 2.0)),
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
