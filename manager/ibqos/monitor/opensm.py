"""The OpenSM `ibqos monitor --opensm-conf` follows: the running one that reads the file, looked
for again at each sample once the one it followed is gone (its PID no longer there, or taken by
another process). A restarted OpenSM may run with another command line (-Y, --dump_files_dir,
-g, -f), so what the monitor reads through it (dla's record, the port) is taken from the new
one; between a stop and the next start none runs, which the monitor exports, and keeps
sampling: the tables the last one programmed are still in force. While none reads it, the
fabric is asked whether this host's port is the master all the same (an OpenSM restarted on
another file: finding `other-config`, as `ibqos status --live` raises it)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..apply.osm_process import OsmProcess, reader
from ..apply.sm_role import master_sm
from ..errors import InputError, ProcessError
from ..health import other_config_finding

if TYPE_CHECKING:
    from ..fabric.local_port import LocalPort
    from ..findings import Finding


class OsmFollow:
    def __init__(self, conf: Path, warn: Callable[[str], None]):
        self.conf, self._warn = conf, warn
        self.osm = reader(conf)  # two that read it: bad input, said before the first sample
        self._said: str | None = None

    def check(self) -> bool:
        """Look again when the followed OpenSM is gone (or none ran); True when `osm` changed.
        Says one line per change (and an error once, however many samples it lasts)."""
        if self.osm is not None and self.osm.alive():
            return False
        try:
            found = reader(self.conf)
            line = self._line(found)
        except InputError as e:  # two read it now: none is followed until one is left
            found, line = None, f"ibqos: error: {e}"
        if line is not None and line != self._said:
            self._warn(line)
        self._said = line
        changed = found != self.osm
        self.osm = found
        return changed

    def elsewhere(self, env: dict[str, str] | None, at: LocalPort) -> Finding | None:
        """`other-config` (health.other_config_finding) while no OpenSM reads the file, `at`
        its port: sminfo is asked only then, not at every sample of a healthy SM host. An
        sminfo that hangs (a loaded SM) is no answer, as for status: no finding."""
        if self.osm is not None:
            return None
        try:
            master = master_sm(env, at)
        except ProcessError:
            return None
        return other_config_finding(self.conf, None, at, master)

    def _line(self, found: OsmProcess | None) -> str | None:
        old = f"OpenSM pid {self.osm.pid}" if self.osm is not None else "no OpenSM"
        if found is None:
            if self.osm is None:
                return None  # none ran before either
            return f"ibqos: {old} (reading {self.conf}) is gone and none reads it now: monitoring on"
        return f"ibqos: {old} was reading {self.conf}; now following OpenSM pid {found.pid}: {' '.join(found.argv)}"
