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
every 1.4 s, at HDR every 0.69 s, at NDR every 0.34 s): the wraps lost are those the 64-bit
PortXmitData / PortRcvData counted beyond the per-SL deltas' sum. Over such an interval the
per-SL counters measure nothing; the reader's sub-window does: the same counters read twice
within the new sample, `window.s` seconds apart (at most `s_max`), which is measured only when
the port's link cannot carry 2^31 words (half a wrap) in `s_max`. A direction neither measures
is `ambiguous`, never a share computed from a fraction of its traffic.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..docfile import DOCUMENT, JsonDoc, error_message, got_note, parse_json
from ..errors import InputError

SCHEMA = "ibqos.counters/1"
BITS = {"xmit_data_sl": 32, "rcv_data_sl": 32, "vl_xmit_wait": 16}
WORD = 4  # the data counters count octets / 4


@dataclass(frozen=True)
class Window:
    """A per-SL attribute read a second time in the same sample: its values then, and the
    seconds since the first reading (between the two round trips' midpoints; the counters were
    read somewhere in each round trip, so the true length lies in [s_min, s_max])."""

    values: tuple[int, ...]  # octets / 4
    s: float
    s_min: float
    s_max: float


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
    xmit_window: Window | None = None  # PortXmitDataSL's sub-window
    rcv_window: Window | None = None  # PortRcvDataSL's (on a port facing a subnet manager's)


class _Doc(BaseModel):
    # strict (docfile.DOCUMENT): the reader writes numbers as numbers, and a --state edited by
    # hand with a port `1.9`, a LID `"3"` or a counter `true` was read as 1, 3 and 1 (int())
    model_config = DOCUMENT


class _WindowDoc(_Doc):
    s: float
    s_min: float
    s_max: float
    values: list[int]


class _PortDoc(_Doc):
    guid: str | int
    port: int
    lid: int = 0
    skipped: str | None = None
    xmit_data_sl: list[int] | None = None
    rcv_data_sl: list[int] | None = None
    vl_xmit_wait: list[int] | None = None
    xmit_data: int | None = None
    rcv_data: int | None = None
    errors: dict[str, str] = {}
    xmit_data_sl_window: _WindowDoc | None = None
    rcv_data_sl_window: _WindowDoc | None = None


class _SampleDoc(_Doc):
    model_config = ConfigDict(extra="ignore")  # --state keeps the monitor's totals beside
    schema_: str = Field(alias="schema")
    time: float
    ports: list[_PortDoc]


@dataclass(frozen=True)
class Sample:
    time: float  # the reader's wall clock when the last answer came (s)
    ports: dict[tuple[int, int], PortCounters]

    @classmethod
    def from_json(cls, text: str, where: str = "counters") -> Sample:
        raw = parse_json(text, where)
        if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
            got = raw.get("schema") if isinstance(raw, dict) else None
            raise InputError(f"not an {SCHEMA} document: schema is {got!r}, not {SCHEMA}", file=where)
        try:
            _SampleDoc.model_validate(raw)
        except ValidationError as e:
            err = e.errors()[0]
            raise JsonDoc(where, text).error(error_message(err) + got_note(err), *err["loc"]) from e
        doc: dict[str, Any] = raw
        try:
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
                    xmit_window=_window(p, "xmit_data_sl"),
                    rcv_window=_window(p, "rcv_data_sl"),
                )
                ports[(pc.guid, pc.port)] = pc
            when = float(doc["time"])
            if not (math.isfinite(when) and when >= 0):  # "nan": every interval from it was nan
                raise ValueError(f"time {doc['time']!r} is not a time")
            return cls(time=when, ports=ports)
        except (ValueError, KeyError, TypeError, AttributeError, OverflowError) as e:
            line = e.lineno if isinstance(e, json.JSONDecodeError) else None
            raise InputError(f"not an {SCHEMA} document: {e}", file=where, line=line) from e

    def to_json(self, extra: dict[str, Any] | None = None) -> str:
        """The document; `extra`: more top-level keys (the monitor's --state keeps its totals)."""
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
            for key, w in (("xmit_data_sl", pc.xmit_window), ("rcv_data_sl", pc.rcv_window)):
                if w is not None:
                    d[f"{key}_window"] = {"s": w.s, "s_min": w.s_min, "s_max": w.s_max, "values": list(w.values)}
            d["errors"] = pc.errors
            ports.append(d)
        return json.dumps({"schema": SCHEMA, "time": self.time, "ports": ports, **(extra or {})})


def _words(p: dict[str, Any], key: str, n: int) -> tuple[int, ...] | None:
    v = p.get(key)
    if v is None:
        return None
    if len(v) != n or any(not isinstance(x, int) or x < 0 or x >= 1 << BITS[key] for x in v):
        raise ValueError(f"port {p.get('guid')}[{p.get('port')}] {key}: {n} counters of {BITS[key]} bits expected")
    return tuple(v)


def _window(p: dict[str, Any], key: str) -> Window | None:
    w = p.get(f"{key}_window")
    if w is None:
        return None
    values = _words({"guid": p.get("guid"), "port": p.get("port"), key: w.get("values")}, key, 16)
    s, lo, hi = (float(w[k]) for k in ("s", "s_min", "s_max"))
    if values is None or not 0 <= lo <= s <= hi or hi == float("inf"):
        raise ValueError(f"port {p.get('guid')}[{p.get('port')}] {key}_window: 16 values and 0 <= s_min <= s <= s_max")
    return Window(values, s, lo, hi)


def _opt_int(p: dict[str, Any], key: str) -> int | None:
    v = p.get(key)
    if v is not None and (not isinstance(v, int) or v < 0):
        raise ValueError(f"port {p.get('guid')}[{p.get('port')}] {key}: not a counter")
    return v


@dataclass(frozen=True)
class SlBytes:
    """Bytes per SL, counted over `seconds`: the whole interval, or the new sample's sub-window."""

    bytes: tuple[int, ...]
    seconds: float
    window: bool = False


@dataclass(frozen=True)
class PortTraffic:
    """What one port counted between two samples: bytes per SL each way (over the interval, or
    its sub-window), the 64-bit counters' bytes each way over the interval, ticks per VL."""

    xmit_sl: SlBytes | None
    rcv_sl: SlBytes | None
    vl_wait: tuple[int, ...] | None
    reset: bool
    ambiguous: tuple[str, ...] = ()  # per-SL attributes neither the interval nor a window measured
    xmit_bytes: int | None = None  # PortXmitData (64 bits) over the interval
    rcv_bytes: int | None = None


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


def _total(old: int | None, new: int | None, reset: bool) -> int | None:
    """Words a 64-bit data counter counted in the interval (since the reset, after one)."""
    if old is None or new is None:
        return None
    return new if reset else new - old


def _interval_measures(sl_words: tuple[int, ...], total: int | None, most: int | None) -> bool:
    """The interval's per-SL deltas are the traffic: no wrap was lost. With the 64-bit total,
    it moved less than a wrap beyond their sum; without it, the link cannot carry a wrap's
    worth in the interval (`most` words; unknown rate: nothing says otherwise)."""
    if total is not None:
        return total - sum(sl_words) < 1 << BITS["xmit_data_sl"]
    return most is None or most < 1 << BITS["xmit_data_sl"]


def _window_words(first: tuple[int, ...], w: Window, words_per_s: float | None) -> tuple[int, ...] | None:
    """The sub-window's words per SL, when it is short enough at the link's rate that no
    counter could wrap even once past half-way (`2 * s_max * rate < 2^32`), and what it
    counted fits in the link (else a counter was cleared in it)."""
    if not words_per_s:
        return None  # no rate, no bound: a window of unknown capacity measures nothing
    most = 2 * w.s_max * words_per_s
    if most >= 1 << BITS["xmit_data_sl"]:
        return None
    words = tuple((b - a) % (1 << BITS["xmit_data_sl"]) for a, b in zip(first, w.values, strict=True))
    return words if sum(words) <= most else None


def traffic(old: PortCounters, new: PortCounters, interval: float, words_per_s: float | None = None) -> PortTraffic:
    """`interval`: the samples' distance (s); `words_per_s`: what the port's link carries, in
    data words (octets / 4) per second. The ports of one sample are read over seconds, so a port
    may have been counted for up to a second more than the interval (`carried`). A per-SL
    counter that went down by more than twice that was cleared, not wrapped."""
    reset = was_reset(old, new)
    carried = None if not words_per_s else int((interval + 1) * words_per_s)
    ambiguous = []

    def data(
        key: str, a: tuple[int, ...] | None, b: tuple[int, ...] | None, total: int | None, w: Window | None
    ) -> SlBytes | None:
        if a is not None and b is not None:
            cleared = None if carried is None else 2 * carried
            words = tuple(delta(x, y, BITS[key], reset, cleared) for x, y in zip(a, b, strict=True))
            if _interval_measures(words, total, carried):
                return SlBytes(tuple(n * WORD for n in words), interval)
        if b is not None and w is not None:
            in_window = _window_words(b, w, words_per_s)
            if in_window is not None:
                return SlBytes(tuple(n * WORD for n in in_window), w.s, window=True)
        if a is not None and b is not None:
            ambiguous.append(key)
        return None

    xmit_total = _total(old.xmit_data, new.xmit_data, reset)
    rcv_total = _total(old.rcv_data, new.rcv_data, reset)
    return PortTraffic(
        xmit_sl=data("xmit_data_sl", old.per_sl_xmit, new.per_sl_xmit, xmit_total, new.xmit_window),
        rcv_sl=data("rcv_data_sl", old.per_sl_rcv, new.per_sl_rcv, rcv_total, new.rcv_window),
        vl_wait=None
        if old.vl_wait is None or new.vl_wait is None
        else tuple(delta(x, y, BITS["vl_xmit_wait"], reset) for x, y in zip(old.vl_wait, new.vl_wait, strict=True)),
        reset=reset,
        ambiguous=tuple(ambiguous),
        xmit_bytes=None if xmit_total is None else xmit_total * WORD,
        rcv_bytes=None if rcv_total is None else rcv_total * WORD,
    )
