"""One port's arbitration configuration: high table, low table, VLHighLimit (docs/arbiter.md)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

MAX_WEIGHT = 255
MAX_VL = 14  # VL15 is never arbitrated
NO_LIMIT = 255


def _entries(raw: Iterable[Iterable[int]], side: str) -> tuple[tuple[int, int], ...]:
    out = []
    for i, e in enumerate(raw):
        try:
            vl, weight = (int(x) for x in e)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{side}[{i}]: an entry is (vl, weight), got {e!r}") from exc
        if not 0 <= vl <= MAX_VL:
            raise ValueError(f"{side}[{i}]: VL {vl} is outside 0..{MAX_VL}")
        if not 0 <= weight <= MAX_WEIGHT:
            raise ValueError(f"{side}[{i}]: weight {weight} is outside 0..{MAX_WEIGHT}")
        out.append((vl, weight))
    return tuple(out)


@dataclass(frozen=True)
class ArbTable:
    """`high`/`low` are (vl, weight) entries in table order; weights count 64-byte units.
    `limit` is VLHighLimit in 4096-byte units (255 = no limit, 0 = one packet)."""

    high: tuple[tuple[int, int], ...]
    low: tuple[tuple[int, int], ...] = ()
    limit: int = 1

    def __init__(self, high: Iterable[Iterable[int]] = (), low: Iterable[Iterable[int]] = (), limit: int = 1):
        object.__setattr__(self, "high", _entries(high, "high"))
        object.__setattr__(self, "low", _entries(low, "low"))
        if not 0 <= int(limit) <= NO_LIMIT:
            raise ValueError(f"limit: {limit} is outside 0..{NO_LIMIT}")
        object.__setattr__(self, "limit", int(limit))

    @property
    def vls(self) -> list[int]:
        """VLs that own at least one entry of non-zero weight."""
        return sorted({vl for vl, w in self.high + self.low if w > 0})

    def to_dict(self) -> dict[str, Any]:
        return {"high": [list(e) for e in self.high], "low": [list(e) for e in self.low], "high_limit": self.limit}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ArbTable:
        return cls(d.get("high", ()), d.get("low", ()), d.get("high_limit", d.get("limit", 1)))

    @staticmethod
    def parse_entries(text: str, side: str = "table") -> list[tuple[int, int]]:
        """`0:9,1:10,2:7` (VL:weight in table order); `-` or empty is an empty table."""
        text = text.strip()
        if text in ("", "-"):
            return []
        out = []
        for tok in text.split(","):
            vl, sep, w = tok.strip().partition(":")
            if not sep or not vl.strip().isdigit() or not w.strip().isdigit():
                raise ValueError(f"{side}: {tok.strip()!r} is not VL:weight")
            out.append((int(vl), int(w)))
        return out

    @staticmethod
    def format_entries(entries: Iterable[tuple[int, int]]) -> str:
        return ",".join(f"{vl}:{w}" for vl, w in entries) or "-"

    @staticmethod
    def format_served(entries: Iterable[tuple[int, int]]) -> str:
        """Only the entries the arbiter visits (weight 0 is skipped), e.g. of a read-back table."""
        return ArbTable.format_entries([e for e in entries if e[1]])
