"""Waiting for a running OpenSM to re-sweep after the fabric changed, from its log alone.

A re-sweep is complete when, after the mark, the log holds a routing pass that *started*
after the mark ('building routing with …' → '… tables configured on all switches') and then
SUBNET UP. Requiring the start after the mark keeps a heavy sweep that was already past
routing when the fabric changed from passing as the re-sweep. The log is read from the
mark's byte offset on, so polling stays cheap on a large verbose log.

    mark = sweep_mark(sm.log)
    ...change the fabric...
    sweep = wait_resweep(sm, mark)      # Resweep: the lines, engines, refusals of that sweep
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ibqos import osmlog
from ibqos.errors import ExternalError
from ibqos.fabric.dla_record import DlaRecord, read_record
from ibqos.proc import wait_until

_BUILD = re.compile(rb"building routing with '")
_CONFIGURED = re.compile(rb"tables configured on all switches")
_UP = re.compile(rb"SUBNET UP\s*$", re.M)


@dataclass(frozen=True)
class SweepMark:
    log: Path
    offset: int  # bytes of the log before the change


def sweep_mark(log: str | Path) -> SweepMark:
    log = Path(log)
    return SweepMark(log, log.stat().st_size if log.exists() else 0)


@dataclass
class Resweep:
    """What OpenSM logged from the mark to the end of the first complete re-sweep after it."""

    lines: list[osmlog.LogLine]
    end_offset: int
    record: DlaRecord | None = None  # the dla plugin's record of this sweep, if it wrote one

    @property
    def engines(self) -> list[str]:
        """Engines that configured the tables, one per routing pass (['minhop'] after a refusal)."""
        return osmlog.configured_engines(self.lines)

    @property
    def engine(self) -> str | None:
        return self.engines[-1] if self.engines else None

    @property
    def engine_seconds(self) -> float | None:
        """Routing time of the last pass: every engine tried (refusals included) to the tables."""
        start = next((ln.t for ln in self.lines if "building routing with" in ln.text), None)
        end = next((ln.t for ln in reversed(self.lines) if "tables configured on all switches" in ln.text), None)
        return None if start is None or end is None else round(end - start, 6)

    @property
    def refusals(self) -> list[str]:
        """dla's reason, from its record, when it refused this sweep."""
        return [self.record.engine.reason or ""] if self.record and self.record.refused else []

    def errors(self) -> list[str]:
        return osmlog.errors(self.lines)


def _complete(chunk: bytes) -> int | None:
    """Byte length of the first complete re-sweep in chunk, or None."""
    b = _BUILD.search(chunk)
    if not b:
        return None
    c = _CONFIGURED.search(chunk, b.end())
    if not c:
        return None
    u = _UP.search(chunk, c.end())
    return u.end() if u else None


def wait_resweep(sm, mark: SweepMark, timeout: float = 120) -> Resweep:
    """Block until `sm` (a running SmDaemon) completed a re-sweep after `mark`."""
    found: list[tuple[bytes, int]] = []

    def done() -> bool:
        with open(mark.log, "rb") as f:
            f.seek(mark.offset)
            chunk = f.read()
        n = _complete(chunk)
        if n is not None:
            found.append((chunk[:n], mark.offset + n))
            return True
        if not sm.alive():
            raise ExternalError(f"OpenSM (pid {sm.pid}) died during a re-sweep; see {mark.log}")
        return False

    wait_until(done, timeout=timeout, interval=0.02, what=f"an OpenSM re-sweep in {mark.log}")
    chunk, end = found[-1]
    dumps = getattr(sm, "dumps", None)
    return Resweep(
        osmlog.parse_text(chunk.decode(errors="replace")), end, read_record(dumps) if dumps is not None else None
    )
