"""The routing engine in force, for `ibqos monitor`, which asks every interval: the last
engine OpenSM's log says configured the tables, else dla when its record says it routed
(health.engine_of, as `ibqos status` names it).

Every file is read again only when it changed (device, inode, size or mtime): at 10,000 CAs
dla's record is 29 MB and a verbose log grows by GBs. The log is read on from where the last
look ended, and from its start when it restarted: rotated (another file at the path) or
truncated in place by OpenSM's `log_max_size` (osmlog.LogMark)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from .. import osmlog
from ..apply.osm_process import OsmProcess, dump_dir
from ..errors import InputError
from ..fabric.dla_record import RECORD_FILE, DlaRecord, read_record
from ..health import engine_of

Stamp = tuple[int, int, int, int]
T = TypeVar("T")


def stamp(path: Path) -> Stamp | None:
    """What tells a file's versions apart without reading it; None when there is none."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise InputError(e.strerror or "cannot read", file=path) from e
    if not stat.S_ISREG(st.st_mode):
        # a FIFO or a device: opening it would wait (or read) forever
        raise InputError("not a regular file", file=path)
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


class SaidOnce:
    """A file's error during a run, said on stderr once until it changes or goes away: the
    monitor keeps sampling (a logrotate that creates the new log 0600 for root while the
    monitor runs as another user, a FIFO put at the path, ended it with exit 2)."""

    def __init__(self, warn: Callable[[str], None]):
        self._warn, self._last = warn, ""

    def __call__(self, error: InputError | OSError | None) -> None:
        if isinstance(error, OSError):  # opening it: a log closed to this user (PermissionError)
            error = InputError(error.strerror or str(error), file=error.filename)
        line = "" if error is None else f"ibqos: error: {error}"
        if line and line != self._last:
            self._warn(line)
        self._last = line

    def attempt(self, read: Callable[[], T]) -> T | None:
        """read(), or None when a file's error stops it (said as above)."""
        try:
            found = read()
        except (InputError, OSError) as e:
            self(e)
            return None
        self(None)
        return found


class EngineWatch:
    def __init__(
        self,
        opensm_conf: Path | None,
        osm_log: Path | None,
        osm: OsmProcess | None = None,
        warn: Callable[[str], None] | None = None,
    ):
        self.conf, self.log = opensm_conf, osm_log
        self._said = SaidOnce(warn or (lambda line: None))
        self.osm = osm  # the OpenSM that reads the conf: its command line and working directory count
        self._conf_stamp: Stamp | None = None
        self._dumps: Path | None = None
        self._log_stamp: Stamp | None = None
        self._mark = osmlog.LogMark(Path(osm_log), 0, b"") if osm_log is not None else None
        self._logged: str | None = None  # the log's last configured engine
        self._record_stamp: Stamp | None = None
        self._record: DlaRecord | None = None
        self._record_said = SaidOnce(warn or (lambda line: None))

    def follow(self, osm: OsmProcess) -> None:
        """Another OpenSM reads the conf now (a restart, monitor.opensm): dla's record is looked
        for where it dumps from the next look on."""
        self.osm, self._conf_stamp = osm, None

    def current(self) -> str | None:
        """engine() during a run: a file it cannot read (the log, the conf, dla's record) names
        no engine, not the last one it read, and is said once (SaidOnce)."""
        return self._said.attempt(self.engine)

    def own_record(self, pid: int | None) -> DlaRecord | None:
        """dla's record when OpenSM `pid` (the one followed) wrote it: the plugin it loaded
        (health.plugin_finding). Read again only when it changed, as for the engine; one that
        cannot be read is no record, said once."""
        rec = self._record_said.attempt(self._routed) if pid is not None else None
        return rec if rec is not None and rec.osm_pid == pid else None

    def engine(self) -> str | None:
        """The engine in force; a file that cannot be read raises its InputError (at start: exit 2)."""
        logged = self._from_log()
        return logged if logged is not None else engine_of([], self._routed())

    def _from_log(self) -> str | None:
        if self.log is None or self._mark is None:
            return None
        now = stamp(self.log)
        if now is not None and now == self._log_stamp:
            return self._logged
        lines, restarted, self._mark = osmlog.lines_since(self._mark)
        self._log_stamp = now
        if restarted:
            self._logged = None  # what named the engine before is gone with the old log
        used = osmlog.configured_engines(lines)
        if used:
            self._logged = used[-1]
        return self._logged

    def _routed(self) -> DlaRecord | None:
        dumps = self._record_dir()
        if dumps is None:
            return None
        now = stamp(dumps / RECORD_FILE)
        if now != self._record_stamp:
            self._record = read_record(dumps) if now is not None else None
            self._record_stamp = now
        return self._record

    def _record_dir(self) -> Path | None:
        if self.conf is None:
            return None
        now = stamp(self.conf)
        if now is None:
            raise InputError("no such file", file=self.conf)
        if now != self._conf_stamp:
            # as OpenSM reads it: an admin's Latin-1 comment or CRLF is no error
            self._dumps = dump_dir(self.conf, self.osm, "none reads this file: start it")
            self._conf_stamp = now
        return self._dumps
