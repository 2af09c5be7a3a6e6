"""Waiting for a running OpenSM to re-sweep after the fabric changed.

Only OpenSM's log marks the end of a sweep (ibqos.osmlog says why): a re-sweep is complete
when the log after the mark holds a routing pass that started after it, then SUBNET UP
(osmlog.resweep_length). The log is read from the mark's byte offset on, so polling stays
cheap on a large verbose log. What dla did in that sweep comes from its record.

    mark = sweep_mark(sm.log)
    ...change the fabric...
    sweep = wait_resweep(sm, mark)      # Resweep: the lines, engines, refusals of that sweep
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ibqos import osmlog
from ibqos.errors import ExternalError
from ibqos.fabric.dla_record import DlaRecord, read_record
from ibqos.proc import wait_until


@dataclass(frozen=True)
class SweepMark:
    log: Path
    offset: int  # bytes of the log before the change


def sweep_mark(log: str | Path) -> SweepMark:
    return SweepMark(Path(log), osmlog.log_size(log))


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
        return osmlog.routing_seconds(self.lines)

    @property
    def refusals(self) -> list[str]:
        """dla's reason, from its record, when it refused this sweep."""
        return [self.record.engine.reason or ""] if self.record and self.record.refused else []

    def errors(self) -> list[str]:
        return osmlog.errors(self.lines)


def wait_resweep(sm, mark: SweepMark, timeout: float = 120) -> Resweep:
    """Block until `sm` (a running SmDaemon) completed a re-sweep after `mark`."""
    found: list[tuple[bytes, int]] = []

    def done() -> bool:
        chunk = osmlog.read_from(mark.log, mark.offset)
        n = osmlog.resweep_length(chunk)
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
