"""The plan document (contract: /work/notes/PLAN_DOC.md). Written by `ibqos plan`, read by
render, testbed, simulate and dryrun."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from ..arbiter import ArbTable
from ..roles import ROLES
from ..docfile import read_json_text, validate, write_atomic
from ..errors import InputError

SCHEMA = "ibqos.plan/1"
ROLE_NAMES = ROLES  # the one definition: ibqos/roles.py


class _M(BaseModel):
    # strict: a plan is ibqos's own document, so an unknown field is a mistake, not an extension
    model_config = ConfigDict(extra="forbid")


class PlanFabric(_M):
    rate: Union[str, float]
    rate_gbps: float
    mtu: Literal[256, 512, 1024, 2048, 4096]
    data_vls: int
    high_cap: int
    low_cap: int
    routing: str
    # fault_tolerance links: dla owns 3 VLs per class (the third for detours around faults).
    fault_tolerance: Literal["none", "links"] = "none"
    vls_per_class: int | None = None  # None in plans written before the field: see classes
    # How many classes fit in data_vls, per fault_tolerance setting ({"none": 4, "links": 2}).
    classes_fit: dict[str, int] = {}


class Bandwidth(_M):
    requested: Union[float, Literal["rest"]]
    target: float  # "rest" resolved, on the terminal role
    planned: float  # exact share on the terminal role
    max: float | None = None  # the policy's max_bandwidth: checked, not planned


class Latency(_M):
    max_latency_us: float | None = None
    max_distance: int | None = None


class PlanClass(_M):
    name: str
    index: int
    priority: Literal["high", "low"]
    sls: list[Annotated[int, Field(ge=0, le=15)]] = Field(min_length=1)
    vls: list[int]
    default: bool
    bandwidth: Bandwidth
    latency: Latency
    match: dict[str, Any]


class VlArbTables(_M):
    high: list[tuple[int, int]]
    low: list[tuple[int, int]]
    high_limit: int = Field(ge=0, le=255)

    def arb_table(self) -> ArbTable:
        return ArbTable(self.high, self.low, self.high_limit)

    @classmethod
    def of(cls, t: ArbTable) -> VlArbTables:
        return cls(high=list(t.high), low=list(t.low), high_limit=t.limit)


class PortOverride(VlArbTables):
    guid: str
    port: int


class VlArbPlan(_M):
    ca: VlArbTables
    sw0: VlArbTables
    terminal: VlArbTables
    local: VlArbTables
    global_: VlArbTables = Field(alias="global")
    ports: list[PortOverride] = []
    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)

    def role(self, name: str) -> VlArbTables:
        return self.global_ if name == "global" else getattr(self, name)


class PlanPartitions(_M):
    """The policy's partitions.conf, carried whole so a plan renders without the policy."""

    file: str
    text: str


class Plan(_M):
    schema_: Literal["ibqos.plan/1"] = Field("ibqos.plan/1", alias="schema")
    policy_sha256: str
    policy_file: str = ""
    partitions: PlanPartitions | None = None
    fabric: PlanFabric
    accounting: Literal["byte", "packet"]
    classes: list[PlanClass] = Field(min_length=1)
    sl2class: list[int] = Field(min_length=16, max_length=16)
    vlarb: VlArbPlan
    analysis: dict[str, dict[str, Any]]
    notes: list[str] = []
    # What the verdicts allow (the policy's `verdict`; 2 pp in plans written before it)
    share_tolerance_pp: float = 2.0
    # Dumps use the document's names ("schema", "global") whoever calls model_dump.
    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)

    @property
    def sl2vl(self) -> list[int]:
        """SL -> base VL of its class (VL c*vls_per_class under DLA; the plugin moves on to the
        class's next VLs after a global hop or around a fault)."""
        by_index = {c.index: c for c in self.classes}
        return [by_index[k].vls[0] for k in self.sl2class]

    def class_by_name(self, name: str) -> PlanClass:
        for c in self.classes:
            if c.name == name:
                return c
        raise KeyError(name)

    # ---- files --------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)

    def save(self, path: str | Path) -> None:
        """Atomic: a temp file in the same directory, renamed over `path`."""
        # allow_nan=False: JSON has no Infinity or NaN, and a plan with one is a bug, not a file
        write_atomic(path, json.dumps(self.to_json(), indent=1, allow_nan=False) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Plan:
        from .check import check_plan

        doc, text = read_json_text(path)
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            got = doc.get("schema") if isinstance(doc, dict) else None
            if isinstance(got, str) and got.startswith("ibqos.plan/"):
                raise InputError(
                    f"written by another version of ibqos (schema {got!r}; this one reads {SCHEMA!r}): "
                    "plan the policy again with this version",
                    file=path,
                    line=1,
                    field="schema",
                )
            raise InputError(f"not an ibqos plan (schema {got!r}, want {SCHEMA!r})", file=path)
        plan = validate(cls, doc, path, text=text)
        check_plan(plan, path, text)
        return plan
