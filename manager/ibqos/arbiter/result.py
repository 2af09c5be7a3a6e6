"""The analyzers' common result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .trace import VlStats


@dataclass(frozen=True)
class ArbAnalysis:
    engine: str  # "exact" or "algorithm1"
    mode: str
    packet_bytes: int
    rate_gbps: float
    per_vl: dict[int, VlStats]
    window_bytes: int  # bytes analysed: one period (exact) or all runs (algorithm1)
    window_packets: int
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "mode": self.mode,
            "packet_bytes": self.packet_bytes,
            "rate_gbps": self.rate_gbps,
            "window_bytes": self.window_bytes,
            "window_packets": self.window_packets,
            "notes": list(self.notes),
            "per_vl": {str(v): s.to_dict() for v, s in sorted(self.per_vl.items())},
        }
