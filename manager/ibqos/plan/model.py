"""The plan document (docs/policy.md, "The plan document"). Written by `ibqos plan`, read by
render, testbed, simulate and dryrun."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from ..arbiter import ArbTable
from ..arbiter.e2e import DLA_SWITCH_HOPS, EndToEnd, end_to_end_on
from ..docfile import DOCUMENT, write_json
from ..policy.model import (
    NAME_RE,
    SL,
    CableMetres,
    Distance,
    Microseconds,
    Routing,
    SwitchHops,
    SwitchLatencyNs,
    TolerancePp,
)

SCHEMA = "ibqos.plan/1"


class _M(BaseModel):
    model_config = DOCUMENT  # a plan is ibqos's own document


class PlanFabric(_M):
    rate: str | float
    rate_gbps: float
    mtu: Literal[256, 512, 1024, 2048, 4096]
    data_vls: int
    high_cap: int
    low_cap: int
    routing: Routing
    # fault_tolerance links: dla owns 3 VLs per class (the third for detours around faults).
    fault_tolerance: Literal["none", "links"] = "none"
    vls_per_class: int | None = None  # None in plans written before the field: see classes
    # How many classes fit in data_vls, per fault_tolerance setting ({"none": 4, "links": 2}).
    classes_fit: dict[str, int] = {}
    # The end-to-end bound's figures (policy fabric.*; these defaults in older plans).
    switch_latency_ns: SwitchLatencyNs = 100.0
    max_cable_m: CableMetres = 2.0
    max_switch_hops: SwitchHops | None = None  # the policy's; None: dla's 3, or no bound


Percent = Annotated[float, Field(ge=0, le=100)]  # of a link: a hand-edited -5 or 500 is no share


class Bandwidth(_M):
    requested: Percent | Literal["rest"]
    target: Percent  # "rest" resolved, on the terminal role
    planned: Percent  # exact share on the terminal role: what the dry run judges a class by
    max: Percent | None = None  # the policy's max_bandwidth: checked, not planned


class Latency(_M):
    max_latency_us: Microseconds | None = None
    max_distance: Distance | None = None
    max_e2e_latency_us: Microseconds | None = None


class EndToEndPlan(_M):
    """The end-to-end bound per class on the worst route (ibqos/arbiter/e2e.py)."""

    switch_hops: int  # switch-to-switch links of the route the bound is for
    # class name -> EndToEnd.to_dict() (bound_us, ports, wait/serialization/wire/switch µs)
    per_class: dict[str, dict[str, Any]]


class PlanClass(_M):
    # the policy's rule: the name is written into qos-policy.conf (a newline there would
    # add lines of its own to OpenSM's QoS policy)
    name: str = Field(pattern=NAME_RE)
    index: int
    priority: Literal["high", "low"]
    sls: list[SL] = Field(min_length=1)
    vls: list[int]
    default: bool
    bandwidth: Bandwidth
    latency: Latency
    match: dict[str, Any]


class PortOverride(_M):
    """One switch port's own tables, winning over its role's. In the document the table's
    fields sit beside `guid` and `port` (`{"guid": …, "port": 1, "high": …, "low": …,
    "high_limit": …}`)."""

    guid: str
    port: int
    table: ArbTable

    @model_validator(mode="before")
    @classmethod
    def _nest(cls, d: Any) -> Any:
        return ArbTable.nest(d, ("guid", "port"))

    @model_serializer(mode="wrap")
    def _flatten(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return ArbTable.flatten(handler(self))


class VlArbPlan(_M):
    ca: ArbTable
    sw0: ArbTable
    terminal: ArbTable
    local: ArbTable
    global_: ArbTable = Field(alias="global")
    ports: list[PortOverride] = []
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    def role(self, name: str) -> ArbTable:
        return self.global_ if name == "global" else getattr(self, name)


class PlanPartitions(_M):
    """The policy's partitions.conf, carried whole so a plan renders without the policy."""

    file: str
    text: str


class Plan(_M):
    schema_: Literal["ibqos.plan/1"] = Field("ibqos.plan/1", alias="schema")
    # hex (or "" for a policy planned from memory): rendered into opensm.conf's banner line,
    # where a newline would add options of its own
    policy_sha256: str = Field(pattern=r"^([0-9a-f]{64})?$")
    policy_file: str = ""
    partitions: PlanPartitions | None = None
    fabric: PlanFabric
    accounting: Literal["byte", "packet"]
    classes: list[PlanClass] = Field(min_length=1)
    sl2class: list[int] = Field(min_length=16, max_length=16)
    vlarb: VlArbPlan
    analysis: dict[str, dict[str, Any]]
    end_to_end: EndToEndPlan | None = None  # None: no route length known (docs/policy.md)
    notes: list[str] = []
    # What the verdicts allow (the policy's `verdict`; 2 pp in plans written before it)
    share_tolerance_pp: TolerancePp = 2.0
    # Dumps use the document's names ("schema", "global") whoever calls model_dump.
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    @property
    def sl2vl(self) -> list[int]:
        """SL -> base VL of its class (VL c*vls_per_class under DLA; the plugin moves on to the
        class's next VLs after a global hop or around a fault)."""
        by_index = {c.index: c for c in self.classes}
        return [by_index[k].vls[0] for k in self.sl2class]

    @property
    def route_switch_hops(self) -> int | None:
        """Switch-to-switch hops of the route the plan's end-to-end bound is for."""
        if self.end_to_end is not None:
            return self.end_to_end.switch_hops
        if self.fabric.max_switch_hops is not None:
            return self.fabric.max_switch_hops
        return DLA_SWITCH_HOPS if self.fabric.routing == "dla" else None

    def e2e_bound(self, wait_us: Callable[[str], float | None], switch_hops: int) -> EndToEnd:
        """The end-to-end bound of one class with `switch_hops` switch-to-switch links, from
        `wait_us(role)`, its worst wait per role (this plan's routing, MTU, rate, wire)."""
        return end_to_end_on(self.fabric, wait_us, switch_hops)

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
        write_json(path, self.to_json(), allow_nan=False)
