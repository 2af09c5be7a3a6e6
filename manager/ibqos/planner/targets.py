"""What one port role must deliver: per-class share, priority and latency bounds."""

from __future__ import annotations

from dataclasses import dataclass

from ..arbiter.rates import us_to_bytes
from ..policy.model import Policy


@dataclass(frozen=True)
class ClassTarget:
    index: int  # class number c: owns VLs c*vpc .. c*vpc+vpc-1
    name: str
    priority: str  # "high" | "low"
    requested: float | str  # % or "rest"
    share: float  # % this role must deliver ("rest" resolved)
    max_distance: int | None
    max_latency_us: float | None
    max_wait_bytes: float | None


@dataclass(frozen=True)
class RoleSpec:
    classes: tuple[ClassTarget, ...]
    vls_per_class: int
    cap_high: int
    cap_low: int
    mtu: int
    mode: str
    rate_gbps: float

    def vls(self, c: ClassTarget) -> list[int]:
        return [c.index * self.vls_per_class + k for k in range(self.vls_per_class)]


def role_spec(policy: Policy, role: str, cap: tuple[int, int] | None = None) -> RoleSpec:
    f = policy.fabric
    fixed = sum(b for b in (c.bounds(role)[0] for c in policy.classes) if b != "rest")
    nrest = sum(1 for c in policy.classes if c.bounds(role)[0] == "rest")
    rest_share = (100.0 - fixed) / nrest if nrest else 0.0
    out = []
    for i, c in enumerate(policy.classes):
        bw, lat_us, dist = c.bounds(role)
        out.append(
            ClassTarget(
                index=i,
                name=c.name,
                priority=c.priority,
                requested=bw,
                share=rest_share if bw == "rest" else float(bw),
                max_distance=dist,
                max_latency_us=lat_us,
                max_wait_bytes=us_to_bytes(lat_us, f.rate_gbps) if lat_us is not None else None,
            )
        )
    ch, cl = cap if cap else (f.vlarb_cap.high, f.vlarb_cap.low)
    return RoleSpec(tuple(out), f.vls_per_class, ch, cl, f.mtu, f.accounting, f.rate_gbps)
