"""What ibqos reads from an OpenSM log: failures, sweeps, fallbacks and routing-engine time."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

# "Nov 21 20:54:29 597144 [1AE606C0] 0x02 -> osm_ucast_mgr_process: minhop tables configured ..."
_LINE = re.compile(r"^(\w{3}\s+\d+ \d\d:\d\d:\d\d) (\d{6}) \[[0-9A-Fa-f]+\] (0x[0-9a-f]{2}) -> (.*)$")
_ERR = re.compile(r"\bERR [0-9A-F]{4}:")
_BUILD = re.compile(r"building routing with '([^']+)'")
_CONFIGURED = re.compile(r"(\S+) tables configured on all switches")


@dataclass
class LogLine:
    t: float  # seconds since the start of the log's year, µs resolution
    level: int
    text: str


def parse(path: str | Path) -> list[LogLine]:
    try:
        return parse_text(Path(path).read_text(errors="replace"))
    except FileNotFoundError:
        return []


def parse_text(text: str) -> list[LogLine]:
    """Lines of a piece of an OpenSM log (e.g. what one re-sweep appended)."""
    out: list[LogLine] = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        ts = datetime.strptime("2000 " + m.group(1), "%Y %b %d %H:%M:%S")
        t = (ts - datetime(2000, 1, 1)).total_seconds() + int(m.group(2)) / 1e6
        out.append(LogLine(t, int(m.group(3), 16), m.group(4)))
    return out


def errors(lines: list[LogLine]) -> list[str]:
    return [ln.text for ln in lines if _ERR.search(ln.text)]


# Which logged errors fail a configuration change (apply): every `ERR xxxx:` line, and the
# partition parser's `PARSE ERROR` (it has no ERR code), logged while the sweep ran. That
# includes the dla plugin's `ERR D1A*`: each one (fabric refused, table file rejected, out of
# memory) means the fabric is not programmed as the plan says. Left out: the SA's PathRecord
# errors (`ERR 1Fxx`), which answer a client's query (e.g. for a P_Key two ports do not
# share) and come and go with the fabric's traffic, not with the configuration.
_SWEEP_FAIL = re.compile(r"\bERR (?!1F)[0-9A-F]{4}:|PARSE ERROR")


def log_size(log: str | Path) -> int:
    try:
        return Path(log).stat().st_size
    except FileNotFoundError:
        return 0


def sweep_failures(log: str | Path, offset: int) -> list[str]:
    """Lines logged after byte `offset` that fail a configuration change (see _SWEEP_FAIL)."""
    try:
        with open(log, "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
    except FileNotFoundError:
        return []
    return [ln.strip() for ln in text.splitlines() if _SWEEP_FAIL.search(ln)]


def subnet_up_count(lines: list[LogLine]) -> int:
    return sum(1 for ln in lines if ln.text.endswith("SUBNET UP"))


def count_subnet_up(log: str | Path) -> int:
    """SUBNET UP lines in the log file, without parsing timestamps: cheap enough to poll a
    large verbose log while waiting for a sweep to end."""
    try:
        with open(log, "rb") as f:
            return sum(1 for line in f if line.rstrip().endswith(b"SUBNET UP"))
    except FileNotFoundError:
        return 0


def configured_engines(lines: list[LogLine]) -> list[str]:
    """Engines that configured the tables, one per routing pass (e.g. ['minhop'] after a fallback)."""
    return [m.group(1) for ln in lines if (m := _CONFIGURED.search(ln.text))]


def engine_passes(lines: list[LogLine]) -> list[float]:
    """Routing-engine time of every routing pass: 'building routing with' → 'tables configured'.
    Needs log_flags with VERBOSE (0x04)."""
    start = None
    out = []
    for ln in lines:
        if _BUILD.search(ln.text):
            start = ln.t
        elif start is not None and _CONFIGURED.search(ln.text):
            out.append(ln.t - start)
            start = None
    return out


def engine_seconds(lines: list[LogLine]) -> float | None:
    """Routing-engine time of the last routing pass."""
    passes = engine_passes(lines)
    return passes[-1] if passes else None
