"""What the arbiter sent, as runs of packets, and the per-VL statistics computed from it.

Definitions (docs/arbiter.md, *Distances*):
- a *run* is consecutive packets of one entry; an interrupted high turn is two runs,
  and only the first of them is a new *visit*;
- distance = number of visits (entries served) between two consecutive visits of a VL;
- worst wait = most bytes sent by other VLs between two consecutive runs of a VL.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from .rates import bytes_to_us


@dataclass(frozen=True)
class VlStats:
    share: float  # % of the bytes sent
    max_distance: int | None  # None: the VL is never served
    mean_distance: float | None
    worst_wait_bytes: int | None
    worst_wait_us: float | None
    bytes: int = 0  # bytes the VL sent over the analysed window

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Trace:
    __slots__ = ("nbytes", "visit", "vl")

    def __init__(self) -> None:
        self.vl: list[int] = []
        self.nbytes: list[int] = []
        self.visit: list[bool] = []

    def add(self, vl: int, nbytes: int, visit: bool) -> None:
        self.vl.append(vl)
        self.nbytes.append(nbytes)
        self.visit.append(visit)

    def __len__(self) -> int:
        return len(self.vl)

    def stats(self, vls: Iterable[int], start: int, end: int, *, cyclic: bool, rate_gbps: float) -> dict[int, VlStats]:
        """Per-VL statistics over runs [start, end). `cyclic`: the window is one period."""
        vl_of, nb, visit = self.vl, self.nbytes, self.visit
        sent = {v: 0 for v in vls}
        positions: dict[int, list[int]] = {v: [] for v in vls}
        nvisits = 0
        for r in range(start, end):
            v = vl_of[r]
            sent[v] = sent.get(v, 0) + nb[r]
            if visit[r]:
                positions.setdefault(v, []).append(nvisits)
                nvisits += 1
        total = sum(sent.values())
        waits = self._worst_waits(start, end, cyclic)
        out = {}
        for v in sorted(sent):
            pos = positions.get(v, [])
            gaps = [b - a for a, b in itertools.pairwise(pos)]
            if cyclic and pos:
                gaps.append(pos[0] + nvisits - pos[-1])
            wait = waits.get(v)
            out[v] = VlStats(
                share=100.0 * sent[v] / total if total else 0.0,
                max_distance=max(gaps) if gaps else None,
                mean_distance=sum(gaps) / len(gaps) if gaps else None,
                worst_wait_bytes=wait,
                worst_wait_us=bytes_to_us(wait, rate_gbps) if wait is not None else None,
                bytes=sent[v],
            )
        return out

    def _worst_waits(self, start: int, end: int, cyclic: bool) -> dict[int, int]:
        vl_of, nb = self.vl, self.nbytes
        last_end: dict[int, int] = {}  # cumulative bytes at the end of the VL's last run
        worst: dict[int, int] = {}
        cum = 0
        laps = 2 if cyclic else 1
        for lap in range(laps):
            for r in range(start, end):
                v = vl_of[r]
                if v in last_end and (lap == laps - 1 or not cyclic):
                    w = cum - last_end[v]
                    if w > worst.get(v, -1):
                        worst[v] = w
                cum += nb[r]
                last_end[v] = cum
        return worst
