"""One sample of every linked port's PMA counters, and the traffic between two samples.

The reader (ibqos-readback -T -c, manager/readback/src/pma.c) writes ibqos.counters/1:
per port PortXmitDataSL / PortRcvDataSL (32 bits per SL, octets / 4), PortVLXmitWaitCounters
(16 bits per VL, ticks) and the 64-bit PortXmitData / PortRcvData of PortCountersExtended
(octets / 4). An attribute a port did not answer is absent and named in its `errors`; a
subnet manager's port is `skipped` (never asked: docs/monitor.md, "Never hurt the SM").

Between two samples a counter that went down has wrapped, unless the port was reset: the
64-bit counters never wrap in practice, so one of them going down marks a reset, and every
counter of that port counts from zero again (its new value is the traffic since the reset).
A per-SL data counter can also be cleared alone (`perfquery --xmtsl -r` clears
PortXmitDataSL, not the 64-bit ones): a wrap that would mean more words than the link carries
in the interval (`max_words`) is that, and its new value is the traffic since.

A 32-bit per-SL counter can wrap more than once in an interval (one SL alone at EDR 4x does
every 1.4 s): the wraps lost are those the 64-bit PortXmitData / PortRcvData counted beyond
the per-SL deltas' sum. Such a direction is `ambiguous`, not measured.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError

SCHEMA = "ibqos.counters/1"
BITS = {"xmit_data_sl": 32, "rcv_data_sl": 32, "vl_xmit_wait": 16}
WORD = 4  # the data counters count octets / 4


@dataclass(frozen=True)
class PortCounters:
    guid: int
    port: int
    lid: int
    skipped: str | None = None
    per_sl_xmit: tuple[int, ...] | None = None  # octets / 4
    per_sl_rcv: tuple[int, ...] | None = None
    vl_wait: tuple[int, ...] | None = None
    xmit_data: int | None = None  # PortCountersExtended, octets / 4
    rcv_data: int | None = None
    errors: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Sample:
    time: float  # the reader's wall clock when the last answer came (s)
    ports: dict[tuple[int, int], PortCounters]

    @classmethod
    def from_json(cls, text: str, where: str = "counters") -> Sample:
        try:
            doc = json.loads(text)
            if doc.get("schema") != SCHEMA:
                raise ValueError(f"schema is {doc.get('schema')!r}, not {SCHEMA}")
            ports = {}
            for p in doc["ports"]:
                pc = PortCounters(
                    guid=int(p["guid"], 16) if isinstance(p["guid"], str) else int(p["guid"]),
                    port=int(p["port"]),
                    lid=int(p.get("lid", 0)),
                    skipped=p.get("skipped"),
                    per_sl_xmit=_words(p, "xmit_data_sl", 16),
                    per_sl_rcv=_words(p, "rcv_data_sl", 16),
                    vl_wait=_words(p, "vl_xmit_wait", 16),
                    xmit_data=_opt_int(p, "xmit_data"),
                    rcv_data=_opt_int(p, "rcv_data"),
                    errors={str(k): str(v) for k, v in p.get("errors", {}).items()},
                )
                ports[(pc.guid, pc.port)] = pc
            return cls(time=float(doc["time"]), ports=ports)
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            line = e.lineno if isinstance(e, json.JSONDecodeError) else None
            raise InputError(f"not an {SCHEMA} document: {e}", file=where, line=line) from e

    def to_json(self) -> str:
        ports = []
        for pc in self.ports.values():
            d: dict[str, Any] = {"guid": f"0x{pc.guid:016x}", "port": pc.port, "lid": pc.lid}
            if pc.skipped:
                d["skipped"] = pc.skipped
            for key, v in (
                ("xmit_data_sl", pc.per_sl_xmit),
                ("rcv_data_sl", pc.per_sl_rcv),
                ("vl_xmit_wait", pc.vl_wait),
            ):
                if v is not None:
                    d[key] = list(v)
            for key, n in (("xmit_data", pc.xmit_data), ("rcv_data", pc.rcv_data)):
                if n is not None:
                    d[key] = n
            d["errors"] = pc.errors
            ports.append(d)
        return json.dumps({"schema": SCHEMA, "time": self.time, "ports": ports})


def _words(p: dict[str, Any], key: str, n: int) -> tuple[int, ...] | None:
    v = p.get(key)
    if v is None:
        return None
    if len(v) != n or any(not isinstance(x, int) or x < 0 or x >= 1 << BITS[key] for x in v):
        raise ValueError(f"port {p.get('guid')}[{p.get('port')}] {key}: {n} counters of {BITS[key]} bits expected")
    return tuple(v)


def _opt_int(p: dict[str, Any], key: str) -> int | None:
    v = p.get(key)
    if v is not None and (not isinstance(v, int) or v < 0):
        raise ValueError(f"port {p.get('guid')}[{p.get('port')}] {key}: not a counter")
    return v


@dataclass(frozen=True)
class PortTraffic:
    """What one port counted between two samples: bytes per SL each way, ticks per VL."""

    xmit_sl_bytes: tuple[int, ...] | None
    rcv_sl_bytes: tuple[int, ...] | None
    vl_wait: tuple[int, ...] | None
    reset: bool
    ambiguous: tuple[str, ...] = ()  # per-SL attributes that wrapped more than once


def was_reset(old: PortCounters, new: PortCounters) -> bool:
    """A 64-bit data counter went down: the port's counters were cleared in between."""
    return any(
        a is not None and b is not None and b < a
        for a, b in ((old.xmit_data, new.xmit_data), (old.rcv_data, new.rcv_data))
    )


def delta(old: int, new: int, bits: int, reset: bool, max_count: int | None = None) -> int:
    """Counted between two readings of a `bits`-wide counter that wraps (at most once). A
    counter that went down by a wrap of more than `max_count` was cleared: its new value."""
    wrapped = (new - old) % (1 << bits)
    if reset or (new < old and max_count is not None and wrapped > max_count):
        return new
    return wrapped


def _lost_wraps(sl_words: tuple[int, ...], old_total: int | None, new_total: int | None, reset: bool) -> bool:
    """The 64-bit total moved a 32-bit wrap or more beyond the per-SL deltas' sum."""
    if reset or old_total is None or new_total is None:
        return False
    return new_total - old_total - sum(sl_words) >= 1 << BITS["xmit_data_sl"]


def traffic(old: PortCounters, new: PortCounters, max_words: int | None = None) -> PortTraffic:
    """`max_words`: what the port's link carries in the interval, in data words (octets / 4)."""
    reset = was_reset(old, new)
    ambiguous = []

    def data(
        key: str, a: tuple[int, ...] | None, b: tuple[int, ...] | None, totals: tuple[int | None, int | None]
    ) -> tuple[int, ...] | None:
        if a is None or b is None:
            return None
        words = tuple(delta(x, y, BITS[key], reset, max_words) for x, y in zip(a, b, strict=True))
        if _lost_wraps(words, totals[0], totals[1], reset):
            ambiguous.append(key)
            return None
        return tuple(w * WORD for w in words)

    return PortTraffic(
        xmit_sl_bytes=data("xmit_data_sl", old.per_sl_xmit, new.per_sl_xmit, (old.xmit_data, new.xmit_data)),
        rcv_sl_bytes=data("rcv_data_sl", old.per_sl_rcv, new.per_sl_rcv, (old.rcv_data, new.rcv_data)),
        vl_wait=None
        if old.vl_wait is None or new.vl_wait is None
        else tuple(delta(x, y, BITS["vl_xmit_wait"], reset) for x, y in zip(old.vl_wait, new.vl_wait, strict=True)),
        reset=reset,
        ambiguous=tuple(ambiguous),
    )
