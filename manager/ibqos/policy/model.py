"""The policy file's schema (pydantic). Everything downstream takes these validated models."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..arbiter.e2e import DLA_SWITCH_HOPS
from ..arbiter.rates import rate_gbps
from ..roles import Role
from ..vls import DataVls, vlcap_code
from .partitions import Partitions

ULPS = ("ipoib", "sdp", "rds", "srp", "iser", "any")
MAX_PORT = 254  # IBA: a node's ports are 1..254 (255 is no port)
NODE_DESC_MAX = 63  # OpenSM's node descriptions: NodeDescription's 64 bytes with its NUL
NAME_RE = r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$"


def _not_bool(v: Any) -> Any:
    # pydantic reads true as 1 where a number is wanted, and YAML reads yes/on/true as true:
    # `max_latency_us: yes` was a 1 µs bound, `sls: [on]` SL 1
    if isinstance(v, bool):
        raise ValueError(f"want a number, got {str(v).lower()}")
    return v


NotBool = BeforeValidator(_not_bool)
# Figures a policy gives and its plan carries, checked alike in both (a plan edited by hand
# is held to what a policy may say)
SwitchLatencyNs = Annotated[float, Field(ge=0, le=1e6), NotBool]
CableMetres = Annotated[float, Field(ge=0, le=1e5), NotBool]
SwitchHops = Annotated[int, Field(ge=0, le=64), NotBool]
Microseconds = Annotated[float, Field(gt=0), NotBool]  # a latency bound
Distance = Annotated[int, Field(ge=1), NotBool]  # table entries between two turns
TolerancePp = Annotated[float, Field(gt=0, le=25), NotBool]
SL = Annotated[int, Field(ge=0, le=15), NotBool]


class _Strict(BaseModel):
    # allow_inf_nan=False: 1e400 in YAML is inf, and no bound or share is infinite. strict: a
    # number written "8" or 8.0 where a whole number is wanted is a typo (lax mode took `sls:
    # ["1"]` as SL 1 and `vlarb_cap: {high: "8"}` as 8); a float field still takes 8
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, strict=True)


def _hex_or_range(v: Any, what: str) -> str:
    """0x1234, 4660, or a range '0x10-0x1f' -> canonical '0x...' text."""
    if isinstance(v, bool):
        raise ValueError(f"{what}: expected a number or a range, got {v!r}")
    if isinstance(v, int):
        if v < 0:
            raise ValueError(f"{what}: must not be negative")
        _in_field([v], what)
        return hex(v)
    text = str(v).strip()
    parts = [p.strip() for p in text.split("-")]
    if len(parts) > 2 or not all(parts):
        raise ValueError(f"{what}: {text!r} is not a number or a range a-b")
    nums = []
    for p in parts:
        try:
            nums.append(int(p, 0))
        except ValueError as exc:
            raise ValueError(f"{what}: {p!r} is not a number (use 0x... for hex)") from exc
    if len(nums) == 2 and nums[0] > nums[1]:
        raise ValueError(f"{what}: range {text!r} is empty")
    _in_field(nums, what)
    return "-".join(hex(n) for n in nums)


# The width of each number's field (IBA: 64-bit service IDs and GUIDs, 16-bit P_Keys whose
# top bit is the membership, 12-bit QoS classes): OpenSM's qos parser reads a wider number as
# another one (strtoull saturates), so it would match other traffic.
_FIELD_BITS = {
    "service_id": 64,
    "port_guid": 64,
    "target_port_guid": 64,
    "source_port_guid": 64,
    "pkey": 16,
    "qos_class": 12,
}


def _in_field(nums: list[int], what: str) -> None:
    bits = _FIELD_BITS.get(what)
    for n in nums:
        if bits is not None and n >= 1 << bits:
            raise ValueError(f"{what}: {n:#x} does not fit in {bits} bits")
        if what == "pkey" and not n & 0x7FFF:
            raise ValueError(f"{what}: {n:#06x} is the invalid P_Key (its low 15 bits are 0)")


class Capacity(_Strict):
    high: Annotated[int, Field(ge=1, le=64), NotBool] = 64
    low: Annotated[int, Field(ge=1, le=64), NotBool] = 64


# dfsssp and lash give every path its own SL, its layer, in place of the QoS SL (OpenSM 3.3.23's
# osm_sa_path_record.c hands the engine's path_sl the QoS SL as a hint both ignore). A plan tells
# its classes apart by SL and maps each SL to its class's VL, so under them a class's traffic
# takes whatever class its layer SL names, and the class map folds the layers onto one VL per
# class: a credit loop wherever the layers were needed (docs/fallback.md measured it on
# dragonflies). They route only in dla's fallback chain, with the identity SL2VL.
SL_LAYERED_ENGINES = ("lash", "dfsssp")


def _routes_by_class_sl(v: str) -> str:
    if v in SL_LAYERED_ENGINES:
        raise ValueError(
            f"{v} gives every path its own SL (its layer) in place of the class's SL, so the classes "
            "cannot be told apart and the class map would fold its layers into credit loops; use dla "
            "(its fallback chain routes with dfsssp, lash and nue where dla cannot), or ftree, updn, minhop"
        )
    return v


# The engines a plan routes with; a plan.json names one of them too
Routing = Annotated[
    Literal["dla", "minhop", "updn", "ftree", "lash", "dfsssp", "file"], AfterValidator(_routes_by_class_sl)
]


class FabricSpec(_Strict):
    rate: Annotated[float | str, NotBool] = "EDR"
    mtu: Literal[256, 512, 1024, 2048, 4096] = 4096
    data_vls: DataVls = 8
    vlarb_cap: Capacity = Capacity()
    routing: Routing = "dla"
    accounting: Literal["byte", "packet"] = "byte"
    # links: reserve dla's third VL per class, so dla can route around a failed link or
    # switch without leaving the class (docs/policy.md, "Fault tolerance").
    fault_tolerance: Literal["none", "links"] = "none"
    # The end-to-end bound's wire and switch figures (docs/policy.md, "Two latency bounds"):
    # forwarding latency per switch, the longest cable on a route (5 ns per metre), and the
    # switch-to-switch hops of the longest route (dla: 3, seed 003 Fig. 4; other engines:
    # give it to get the bound).
    switch_latency_ns: SwitchLatencyNs = 100.0
    max_cable_m: CableMetres = 2.0
    max_switch_hops: SwitchHops | None = None

    @field_validator("rate")
    @classmethod
    def _rate(cls, v: Any) -> Any:
        rate_gbps(v)  # raises ValueError with the list of names
        return v

    @field_validator("data_vls", mode="before")
    @classmethod
    def _data_vls(cls, v: Any) -> Any:
        vlcap_code(v)  # raises ValueError naming the counts a port runs
        return v

    @property
    def rate_gbps(self) -> float:
        return rate_gbps(self.rate)

    @property
    def vls_per_class(self) -> int:
        """DLA moves a packet from VL 2c to 2c+1 after its global hop, and with
        fault_tolerance links owns a third VL per class for detours; other engines use one VL."""
        return vls_per_class(self.routing, self.fault_tolerance)

    @property
    def route_switch_hops(self) -> int | None:
        """Switch-to-switch hops of the longest route: the policy's, else dla's dragonfly 3,
        else unknown (no end-to-end bound)."""
        if self.max_switch_hops is not None:
            return self.max_switch_hops
        return DLA_SWITCH_HOPS if self.routing == "dla" else None

    def classes_fit(self, fault_tolerance: str | None = None) -> int:
        """How many classes fit in the data VLs (with this fault_tolerance, default the spec's)."""
        return self.data_vls // vls_per_class(self.routing, fault_tolerance or self.fault_tolerance)


def vls_per_class(routing: str, fault_tolerance: str = "none") -> int:
    if routing != "dla":
        return 1
    return 3 if fault_tolerance == "links" else 2


class PortGroup(_Strict):
    name: str = Field(pattern=NAME_RE)
    port_guid: list[int | str] = []
    port_name: list[str] = []
    node_type: list[Literal["CA", "SWITCH", "ROUTER", "ALL", "SELF"]] = []
    pkey: list[int | str] = []
    partition: list[str] = []

    @field_validator("port_guid", "pkey", mode="before")
    @classmethod
    def _nums(cls, v: Any, info: ValidationInfo) -> Any:
        return [_hex_or_range(x, info.field_name or "") for x in (v if isinstance(v, list) else [v])]

    @field_validator("port_name", "partition")
    @classmethod
    def _no_commas(cls, v: Any, info: ValidationInfo) -> Any:
        for x in v:
            if "," in x or "\n" in x or '"' in x:
                # OpenSM's qos-policy.conf separates names by commas and quotes one with
                # spaces; nothing in it can spell a '"'
                raise ValueError(f"{info.field_name}: {x!r} must not contain commas, newlines or '\"'")
        return v

    @field_validator("port_name")
    @classmethod
    def _port_name(cls, v: Any) -> Any:
        # OpenSM's grammar: the last "/P<n>" splits node description and port, n >= 1; on a
        # switch any port names the switch's one port GUID (port 0 cannot be named). ASCII
        # digits, as strtoul reads them: \d also took 'P1\u0663', port 13 here and another to OpenSM.
        for x in v:
            m = re.fullmatch(r"(.+)/[pP](0[xX][0-9a-fA-F]+|[1-9][0-9]*|0)", x)
            if m is None and re.fullmatch(r".+/[pP]0[0-9]+", x):
                # OpenSM's strtoul(.., 0) reads a leading 0 as octal: P010 is port 8
                raise ValueError(f"port_name: {x!r}: not a port number (P8 or P0x8, not octal)")
            if m is None or int(m.group(2), 0) == 0:
                raise ValueError(
                    f"port_name: {x!r} must be '<node description>/P<port>' with a "
                    "port from 1, as OpenSM reads port names"
                )
            desc, num = m.groups()
            port = int(num, 0)
            if port > MAX_PORT:
                # OpenSM keeps strtoul's number in an unsigned: P4294967297 is port 1
                raise ValueError(f"port_name: {x!r}: port {port}: a port is 1..{MAX_PORT}")
            if not (desc.isascii() and desc.isprintable()) or len(desc) > NODE_DESC_MAX:
                # OpenSM names a node by its description cut to 63 bytes, every byte outside
                # printable ASCII made a space (clean_nodedesc): no node is named this
                raise ValueError(
                    f"port_name: node description {desc!a} ({len(desc)} characters): OpenSM names nodes by "
                    f"printable ASCII of at most {NODE_DESC_MAX} characters, any other byte read as a space, "
                    "so this names no port (ibnetdiscover shows the descriptions as OpenSM reads them)"
                )
        return v

    @model_validator(mode="after")
    def _not_empty(self) -> Self:
        if not (self.port_guid or self.port_name or self.node_type or self.pkey or self.partition):
            raise ValueError(
                f"port group {self.name!r} selects nothing: give port_guid, port_name, node_type, pkey or partition"
            )
        return self


class UlpRule(_Strict):
    ulp: Literal["ipoib", "sdp", "rds", "srp", "iser", "any"]
    pkey: int | str | None = None
    port_num: int | str | None = None  # sdp / iser / rds target TCP port(s)
    service_id: int | str | None = None  # any
    target_port_guid: int | str | None = None  # srp / any
    source_port_guid: int | str | None = None  # any

    @field_validator("pkey", "service_id", "target_port_guid", "source_port_guid", mode="before")
    @classmethod
    def _nums(cls, v: Any, info: ValidationInfo) -> Any:
        return None if v is None else _hex_or_range(v, info.field_name or "")

    @field_validator("port_num", mode="before")
    @classmethod
    def _port(cls, v: Any) -> Any:
        if v is None:
            return None
        text = str(v).strip()
        if not re.fullmatch(r"[0-9]{1,5}(-[0-9]{1,5})?", text):  # ASCII, as rendered for OpenSM
            raise ValueError(f"port_num: {text!r} is not a TCP port or range a-b")
        ports = [int(p) for p in text.split("-")]
        if max(ports) > 0xFFFF:
            # the service ID would leave the ULP's space (SDP 0x10000 + port) for another's
            raise ValueError(f"port_num: {max(ports)} is not a TCP port (0-65535)")
        if ports[0] > ports[-1]:
            raise ValueError(f"port_num: range {text!r} is empty")
        return text

    @model_validator(mode="after")
    def _one_criterion(self) -> Self:
        given = [
            k
            for k in ("pkey", "port_num", "service_id", "target_port_guid", "source_port_guid")
            if getattr(self, k) is not None
        ]
        allowed = {
            "ipoib": {"pkey"},
            "sdp": {"port_num"},
            "rds": {"port_num"},
            "iser": {"port_num"},
            "srp": {"target_port_guid"},
            "any": {"pkey", "service_id", "target_port_guid", "source_port_guid"},
        }[self.ulp]
        if len(given) > 1:
            raise ValueError(f"ulp {self.ulp}: give at most one of {', '.join(given)}")
        if given and given[0] not in allowed:
            raise ValueError(f"ulp {self.ulp} cannot be matched by {given[0]} (allowed: {', '.join(sorted(allowed))})")
        if self.ulp == "srp" and not given:
            # OpenSM's qos-ulps grammar has no bare `srp`: SRP is matched by its target port.
            raise ValueError("ulp srp needs target_port_guid (OpenSM matches SRP by its target port)")
        return self

    @property
    def criterion(self) -> str:
        for k, word in (
            ("pkey", "pkey"),
            ("port_num", "port-num"),
            ("service_id", "service-id"),
            ("target_port_guid", "target-port-guid"),
            ("source_port_guid", "source-port-guid"),
        ):
            v = getattr(self, k)
            if v is not None:
                return f"{word} {v}"
        return ""


def _ulp_shorthand(v: Any) -> Any:
    return {"ulp": v} if isinstance(v, str) else v


class Match(_Strict):
    """How traffic is matched to the class, in qos-policy.conf terms.

    `groups` are port groups; `direction` says which end of a path must be in one of them:
    `destination`, `source`, `both` (source and destination) or `either` (default)."""

    groups: list[PortGroup] = []
    direction: Literal["source", "destination", "both", "either"] = "either"
    service_id: list[int | str] = []
    pkey: list[int | str] = []
    qos_class: list[int | str] = []
    ulps: list[Annotated[UlpRule, Field()]] = []

    @field_validator("service_id", "pkey", "qos_class", mode="before")
    @classmethod
    def _nums(cls, v: Any, info: ValidationInfo) -> Any:
        return [_hex_or_range(x, info.field_name or "") for x in (v if isinstance(v, list) else [v])]

    @field_validator("ulps", mode="before")
    @classmethod
    def _ulps(cls, v: Any) -> Any:
        return [_ulp_shorthand(x) for x in (v if isinstance(v, list) else [v])]

    @property
    def has_rules(self) -> bool:
        return bool(self.groups or self.service_id or self.pkey or self.qos_class)


# The smallest share a 64-entry table of 255-weight entries expresses is about 0.006 %: a
# guarantee below 0.01 % is a typo, and would divide by zero in the synthesis.


def _share(v: Any) -> Any:
    """A share as a policy writes it: 40, '40%', or rest, for a class and a role alike."""
    v = _not_bool(v)
    if isinstance(v, str) and v.strip() != "rest":
        num = v.strip().removesuffix("%").strip()
        try:
            return float(num)  # '40' and '40%' are written shares (docs/policy.md)
        except ValueError:
            # `80 Gb/s`: a rate, not a share of the link
            raise ValueError(f"{v!r} is not a share: give a percentage of the link (40 or '40%') or rest") from None
    return v


Bandwidth = Annotated[Annotated[float, Field(ge=0.01, le=100)] | Literal["rest"], BeforeValidator(_share)]


class RoleOverride(_Strict):
    bandwidth: Bandwidth | None = None
    max_latency_us: Microseconds | None = None
    max_distance: Distance | None = None


class ClassSpec(_Strict):
    name: str = Field(pattern=NAME_RE)
    priority: Literal["high", "low"] = "low"
    bandwidth: Bandwidth
    # A ceiling the verdict checks when every class saturates. The arbiter cannot enforce one
    # (it is work-conserving: an idle class's turns go to the others), so the plan does not.
    max_bandwidth: Annotated[float, Field(ge=0.01, le=100), NotBool] | None = None
    max_latency_us: Microseconds | None = None
    max_distance: Distance | None = None
    # One packet from its source CA to its destination, arbitration waits, serialization, wire
    # and switches summed over the worst route (ibqos/arbiter/e2e.py).
    max_e2e_latency_us: Microseconds | None = None
    sls: list[SL] | None = None
    default: bool = False
    match: Match = Match()
    roles: dict[Role, RoleOverride] = {}

    def bounds(self, role: str) -> tuple[Bandwidth, float | None, int | None]:
        o = self.roles.get(role)  # type: ignore[call-overload]  # role: any role name
        if o is None:
            return self.bandwidth, self.max_latency_us, self.max_distance
        return (
            o.bandwidth if o.bandwidth is not None else self.bandwidth,
            o.max_latency_us if o.max_latency_us is not None else self.max_latency_us,
            o.max_distance if o.max_distance is not None else self.max_distance,
        )


class VerdictSpec(_Strict):
    # How far a simulated or measured share may fall below the plan before the class fails
    # (and rise above max_bandwidth): contention, packet granularity and finite runs move it.
    share_tolerance_pp: TolerancePp = 2.0


class Policy(_Strict):
    fabric: FabricSpec = FabricSpec()
    verdict: VerdictSpec = VerdictSpec()
    partitions: str | None = None  # OpenSM partitions.conf, relative to the policy file
    classes: list[ClassSpec] = Field(min_length=1)

    _source: str = PrivateAttr("")
    _sha256: str = PrivateAttr("")
    _lines: dict[tuple[Any, ...], int] = PrivateAttr(default_factory=dict)
    _partitions: Partitions | None = PrivateAttr(None)  # once read

    @property
    def partitions_file(self) -> Partitions | None:
        """The partitions file, read and checked by load_policy (None without `partitions`)."""
        return self._partitions

    @property
    def source(self) -> str:
        return self._source

    @property
    def sha256(self) -> str:
        return self._sha256

    def where(self, *loc: Any) -> tuple[str | None, int | None]:
        """(file, line) of a location such as ("classes", 2, "max_distance")."""
        loc = tuple(loc)
        while loc:
            if loc in self._lines:
                return self._source or None, self._lines[loc]
            loc = loc[:-1]
        return self._source or None, self._lines.get(())
