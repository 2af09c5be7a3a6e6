"""The one reader of OpenSM's log: nothing else in ibqos, ibqos_sim or the bench parses it.

ibqos learns what happened from structured sources wherever one exists: the dla plugin's
record (`ibqos-dla.json`: routed or refused and why, the table file's fate, groups, VLArb and
VLHighLimit per port), OpenSM's dumps (LFTs, SL2VL, the subnet), the live read-back (SMPs)
and the SA's path records. What is left here is what OpenSM 3.3.23 says *only* in its log:

- which engine configured the tables (`<engine> tables configured on all switches`), so the
  engine in force after a fallback. `osm_opensm_t.routing_engine_used` is in no dump and no
  MAD; only the console's `status` shows it, and the console is off on production SMs.
- that a sweep ended (`SUBNET UP`), for the harness's OpenSM runs without the plugin
  (minhop baselines). `apply` reads it from the plugin's record instead (its sweep counters,
  apply.opensm_ctl), which log truncation (`log_max_size`) cannot lose.
- the errors of a sweep (`ERR xxxx:`, the partition parser's `PARSE ERROR`): OpenSM rejects
  a policy, partition or option only by logging it (an apply's sweep, the harness's runs).
- routing-engine time (`building routing with` → `tables configured`): OpenSM times nothing
  else, and the bench compares dla with OpenSM's own engines.
- an engine's own reason for not routing (updn's "no root nodes were found", lash's "cannot
  build"), and the lanes lash and dfsssp needed ("Lanes needed: N"): OpenSM's engines report
  them nowhere else (dla's reason and levels are in its record).

Each of those is one small function below; callers never look at a line's text.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from .errors import InputError

# "Nov 21 20:54:29 597144 [1AE606C0] 0x02 -> osm_ucast_mgr_process: minhop tables configured ..."
_LINE = re.compile(r"^(\w{3}\s+\d+ \d\d:\d\d:\d\d) (\d{6}) \[[0-9A-Fa-f]+\] (0x[0-9a-f]{2}) -> (.*)$")
_ERR = re.compile(r"\bERR ([0-9A-F]{4}):")
_BUILD = re.compile(r"building routing with '([^']+)'")
_CONFIGURED = re.compile(r"(\S+) tables configured on all switches")
_LANES = re.compile(r"(?:Virtual )?Lanes needed: (\d+)")
# dla fills OpenSM's hop rows after the routing (docs/hop-rows.md), outside engine_passes
_HOP_FILL = re.compile(r"dla: hop rows filled after the routing in ([0-9.]+) ms")
_FUNC = re.compile(r"^\w+: ")  # the logging function's name before the message
# the same marks, on raw bytes: polling a growing verbose log must not decode and parse it
_BUILD_B = re.compile(rb"building routing with '")
_CONFIGURED_B = re.compile(rb"tables configured on all switches")
_UP_B = re.compile(rb"SUBNET UP\s*$", re.M)


@dataclass
class LogLine:
    t: float  # seconds since the start of the log's year, µs resolution
    level: int
    text: str


# What status and verify read a log for: the engine that configured the tables, and why one
# refused (its ERR lines and complaints, engine_complaints)
ROUTING_LINES = re.compile(rb"tables configured|\bERR [0-9A-F]{4}:|dla:|disabling|cannot build")
_CHUNK = 16 << 20


def parse(path: str | Path, keep: re.Pattern[bytes] | None = None) -> list[LogLine]:
    """The log's lines; with `keep`, only the lines it matches, read in chunks: a production
    log is GBs (read whole, 400 MB took 2 GB and 22 s), its routing lines a few."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            # --osm-log naming a FIFO or a device: opening it would wait (or read) forever.
            # A log can be GBs, so not inputfile's size cap: only its refusal of non-files.
            raise InputError("not a regular file (OpenSM's log is one)", file=path)
        if keep is None:
            return parse_text(Path(path).read_text(errors="replace"))
        with open(path, "rb") as f:
            return parse_text("\n".join(_lines_matching(f, keep)))
    except FileNotFoundError:
        return []


def _lines_matching(f: BinaryIO, keep: re.Pattern[bytes]) -> Iterator[str]:
    rest = b""
    while True:
        chunk = f.read(_CHUNK)
        data = rest + chunk
        cut = len(data) if not chunk else data.rfind(b"\n") + 1  # whole lines; at the end, all
        data, rest = data[:cut], data[cut:]
        end = 0
        for m in keep.finditer(data):
            if m.start() < end:
                continue  # a second match on a line already kept
            start = data.rfind(b"\n", 0, m.start()) + 1
            end = data.find(b"\n", m.end())
            end = len(data) if end < 0 else end
            yield data[start:end].decode(errors="replace")
        if not chunk:
            return


def parse_text(text: str) -> list[LogLine]:
    """Lines of a piece of an OpenSM log (e.g. what one re-sweep appended)."""
    out: list[LogLine] = []
    # a stamp's seconds, parsed once: strptime per line was 20 s of a 10,000-CA dry run
    seconds: dict[str, float] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        stamp = m.group(1)
        base = seconds.get(stamp)
        if base is None:
            ts = datetime.strptime("2000 " + stamp, "%Y %b %d %H:%M:%S")
            base = seconds[stamp] = (ts - datetime(2000, 1, 1)).total_seconds()
        out.append(LogLine(base + int(m.group(2)) / 1e6, int(m.group(3), 16), m.group(4)))
    return out


def error_code(text: str) -> str | None:
    """The code of an `ERR xxxx:` message (`D1A3`), None for any other line: the one reader
    of OpenSM's error lines."""
    m = _ERR.search(text)
    return m.group(1) if m else None


def errors(lines: list[LogLine], allow: tuple[str, ...] = ()) -> list[str]:
    """`ERR xxxx:` lines, except those whose code is in `allow` (e.g. the dla refusal its
    record already reports)."""
    return [ln.text for ln in lines if (code := error_code(ln.text)) and code not in allow]


def matching(lines: list[LogLine], pattern: str) -> list[str]:
    """Lines whose text matches `pattern` (tests waiting for a line the plugin logs)."""
    rx = re.compile(pattern)
    return [ln.text for ln in lines if rx.search(ln.text)]


# Which logged errors fail a configuration change (apply): every `ERR xxxx:` line, and the
# partition parser's `PARSE ERROR` (it has no ERR code), logged while the sweep ran. That
# includes the dla plugin's `ERR D1A*`: each one (fabric refused, table file rejected, out of
# memory) means the fabric is not programmed as the plan says. Left out: the SA's PathRecord
# errors (`ERR 1Fxx`), which answer a client's query (e.g. for a P_Key two ports do not
# share) and come and go with the fabric's traffic, not with the configuration.
# Not exempted, and not needed: OpenSM's checks of its own cache (guid2mkey, neighbors: ERR
# 7506..7521, e.g. 7518 after a recabling while it was down) run only in osm_subn_init
# (3.3.23 osm_subnet.c), at its start, before any sweep apply starts and marks the log
# (test_apply_recabled).
def _fails_sweep(text: str) -> bool:
    code = error_code(text)
    return (code is not None and not code.startswith("1F")) or "PARSE ERROR" in text


def log_size(log: str | Path) -> int:
    try:
        return Path(log).stat().st_size
    except FileNotFoundError:
        return 0


def read_from(log: str | Path, offset: int) -> bytes:
    """What the log holds after byte `offset` (b"" when there is no log yet)."""
    try:
        with open(log, "rb") as f:
            f.seek(offset)
            return f.read()
    except FileNotFoundError:
        return b""


_HEAD = 256  # bytes: a log's first line, with its µs timestamp, tells one log from the next


@dataclass(frozen=True)
class LogMark:
    """Where a log ended at some moment. OpenSM's `log_max_size` truncates the file in place
    (same inode, from byte 0), so a smaller size or a different first line means it restarted;
    logrotate puts another file (another inode) at the path."""

    path: Path
    offset: int
    head: bytes
    ino: int | None = None  # None: not known (no file at the mark)
    held: BinaryIO | None = field(default=None, compare=False, repr=False)  # held_mark's open file


def _head(f: BinaryIO) -> bytes:
    f.seek(0)
    return f.read(_HEAD)


def log_mark(log: str | Path) -> LogMark:
    try:
        with open(log, "rb") as f:
            st = os.fstat(f.fileno())
            return LogMark(Path(log), st.st_size, _head(f), st.st_ino)
    except FileNotFoundError:
        return LogMark(Path(log), 0, b"")


def _read_after(mark: LogMark) -> tuple[bytes, bool, int, bytes, int | None]:
    """(what the log holds after `mark`, or all of it when it restarted; whether it did; the
    offset the bytes start at; the log's head and inode now)."""
    try:
        with open(mark.path, "rb") as f:
            st = os.fstat(f.fileno())
            head = _head(f)
            n = min(len(head), len(mark.head))
            restarted = (
                st.st_size < mark.offset
                or head[:n] != mark.head[:n]
                or (mark.ino is not None and st.st_ino != mark.ino)
            )
            start = 0 if restarted else mark.offset
            f.seek(start)
            return f.read(), restarted, start, head, st.st_ino
    except FileNotFoundError:
        return b"", mark.offset > 0, 0, b"", None


@contextmanager
def held_mark(log: str | Path) -> Iterator[LogMark]:
    """log_mark, with the file held open until the block ends: what OpenSM logged after the
    mark into a file logrotate has since moved away (Debian's /etc/logrotate.d/opensm renames
    it, sends SIGUSR1, OpenSM opens a new one, and the old one is compressed and removed) is
    still read, from the held file (read_since)."""
    try:
        f = open(log, "rb")  # noqa: SIM115 (held until the block ends)
    except FileNotFoundError:
        yield LogMark(Path(log), 0, b"")
        return
    with f:
        st = os.fstat(f.fileno())
        yield LogMark(Path(log), st.st_size, _head(f), st.st_ino, held=f)


def read_since(mark: LogMark) -> tuple[bytes, bool]:
    """What was logged after `mark`, and whether some of it is lost: the log was truncated in
    place in between (then all it holds now). A log rotated away from a held mark loses
    nothing: its rest is read from the held file, then the new log."""
    data, restarted, _, _, ino = _read_after(mark)
    old = mark.held
    if restarted and old is not None and ino != mark.ino:
        size = os.fstat(old.fileno()).st_size
        if size >= mark.offset and _head(old) == mark.head:  # the old file, not cut meanwhile
            old.seek(mark.offset)
            return old.read() + data, False
    return data, restarted


def lines_since(mark: LogMark) -> tuple[list[LogLine], bool, LogMark]:
    """The complete lines logged after `mark`, whether the log restarted in between (then all
    its lines), and the mark after the last complete line (a line still being written is read
    whole next time)."""
    data, restarted, start, head, ino = _read_after(mark)
    data = data[: data.rfind(b"\n") + 1]
    return parse_text(data.decode(errors="replace")), restarted, LogMark(mark.path, start + len(data), head, ino)


def sweep_failures(mark: LogMark) -> tuple[list[str], bool]:
    """Lines logged after `mark` that fail a configuration change (see _fails_sweep), and
    whether the log was truncated since the mark (some may be lost)."""
    data, truncated = read_since(mark)
    text = data.decode(errors="replace")
    return [ln.strip() for ln in text.splitlines() if _fails_sweep(ln)], truncated


def engine_since(mark: LogMark) -> str | None:
    """The engine that configured the tables last after `mark`; None when the log names none
    (log_flags without 0x02 silence the line)."""
    data, _ = read_since(mark)
    found = _CONFIGURED.findall(data.decode(errors="replace"))
    return found[-1] if found else None


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


def resweep_length(chunk: bytes) -> int | None:
    """Bytes of `chunk` (the log after a mark) up to the end of its first complete re-sweep: a
    routing pass that starts in the chunk ('building routing with' → 'tables configured on
    all switches'), then SUBNET UP. None while there is none. Requiring the start after the
    mark keeps a sweep that was already past routing from passing as the re-sweep."""
    b = _BUILD_B.search(chunk)
    if not b:
        return None
    c = _CONFIGURED_B.search(chunk, b.end())
    if not c:
        return None
    u = _UP_B.search(chunk, c.end())
    return u.end() if u else None


def configured_engines(lines: list[LogLine]) -> list[str]:
    """Engines that configured the tables, one per routing pass (e.g. ['minhop'] after a fallback)."""
    return [m.group(1) for ln in lines if (m := _CONFIGURED.search(ln.text))]


def engine_in_force(log: str | Path | None) -> str | None:
    """The engine of OpenSM's last routing pass in `log`, or None when the log does not say."""
    used = configured_engines(parse(log, keep=ROUTING_LINES)) if log is not None else []
    return used[-1] if used else None


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


def hop_fill_passes(lines: list[LogLine]) -> list[tuple[float, float]]:
    """dla's fill of OpenSM's hop rows after each routing pass it routed: (log time, ms).
    Needs log_flags with VERBOSE (0x04)."""
    return [(ln.t, float(m.group(1))) for ln in lines if (m := _HOP_FILL.search(ln.text))]


def engine_seconds(lines: list[LogLine]) -> float | None:
    """Routing-engine time of the last routing pass."""
    passes = engine_passes(lines)
    return passes[-1] if passes else None


def routing_seconds(lines: list[LogLine]) -> float | None:
    """From the first engine tried to the tables configured: every engine of the chain
    (refusals included), as one sweep spends it."""
    start = next((ln.t for ln in lines if _BUILD.search(ln.text)), None)
    end = next((ln.t for ln in reversed(lines) if _CONFIGURED.search(ln.text)), None)
    return None if start is None or end is None else round(end - start, 6)


def lanes_needed(lines: list[LogLine]) -> int | None:
    """The lanes lash or dfsssp reported needing ("Lanes needed: N"), or None."""
    return next((int(m.group(1)) for ln in lines if (m := _LANES.search(ln.text))), None)


def engine_complaints(lines: list[LogLine], engine: str, limit: int = 3) -> list[str]:
    """Why OpenSM did not route with `engine`, in its own words: its ERR lines and the
    engine's own complaints (updn's 'no root nodes were found'), without the function name."""
    keys = (f"{engine}:", "disabling", "cannot build")
    said: list[str] = []
    for ln in lines:
        text = ln.text.strip()
        if "tables configured" in text or not (error_code(text) or any(k in text for k in keys)):
            continue
        text = text.split(": ", 1)[1] if _FUNC.match(text) else text
        if text not in said:
            said.append(text)
    return said[:limit]


# How far before an apply's mark its log is searched for the errors its sweep logged: several
# of OpenSM's sweeps (sweep_interval 10 s) at its default log_flags on a large fabric
BEFORE_WINDOW = 16 << 20
# Errors whose text does not say which file or table they are about, and whose files an apply
# replaces: the partition parser's (PARSE ERROR: line N), the QoS policy parser's (ERR ACxx) and
# the dla plugin's (ERR D1Ax: its table file). The same text before the apply is no proof that
# the new file has not the same fault.
_ABOUT_APPLIED_FILES = re.compile(r"PARSE ERROR|\bERR (AC|D1A)[0-9A-F]{1,2}:")


def _message(line: str) -> str:
    """A log line without its time stamp, thread and level: what repeats sweep after sweep."""
    m = _LINE.match(line.strip())
    return m.group(4) if m else line.strip()


def split_known_failures(mark: LogMark, failures: list[str]) -> tuple[list[str], list[str]]:
    """`failures` (sweep_failures's) split into those that are new and those the log held, word
    for word, in the BEFORE_WINDOW bytes before `mark`: logged by the sweeps of the previous
    configuration too (a P_Key table too small for the admin's partitions, ERR 0512, every
    sweep), so not caused by what changed. An error about a file the apply replaces is new."""
    held = mark.held
    if held is None or not failures:
        return failures, []
    start = max(0, mark.offset - BEFORE_WINDOW)
    before = os.pread(held.fileno(), mark.offset - start, start).decode(errors="replace")
    seen = {_message(ln) for ln in before.splitlines() if _fails_sweep(ln)}
    new: list[str] = []
    known: list[str] = []
    for ln in failures:
        (known if _message(ln) in seen and not _ABOUT_APPLIED_FILES.search(ln) else new).append(ln)
    return new, known
