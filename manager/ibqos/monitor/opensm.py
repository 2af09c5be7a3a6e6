"""The OpenSM `ibqos monitor --opensm-conf` follows: the running one that reads the file, looked
for again at each sample once the one it followed is gone (its PID no longer there, or taken by
another process). A restarted OpenSM may run with another command line (-Y, --dump_files_dir,
-g, -f), so what the monitor reads through it (dla's record, the port) is taken from the new
one; between a stop and the next start none runs, which the monitor exports, and keeps
sampling: the tables the last one programmed are still in force. While none reads it, the
fabric is asked whether this host's port is the master all the same (an OpenSM restarted on
another file: finding `other-config`, as `ibqos status --live` raises it). While one reads it,
the fabric is asked whether that one is the master (a failover to an SM on its own files:
finding `standby`), at most every ROLE_EVERY seconds while it is, and at every sample while it
is not, so that its return is seen at the next one."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..apply.osm_process import OsmProcess, reader
from ..apply.sm_role import master_sm, role_of
from ..errors import InputError, ProcessError
from ..health import other_config_finding, standby_finding

if TYPE_CHECKING:
    from ..fabric.local_port import LocalPort
    from ..findings import Finding


# seconds between two asks of the master SM while the OpenSM followed is it: a failover is seen
# within this plus one interval, well inside the alert's hold (10 minutes)
ROLE_EVERY = 60.0


class OsmFollow:
    def __init__(self, conf: Path, warn: Callable[[str], None]):
        self.conf, self._warn = conf, warn
        self.osm = reader(conf)  # two that read it: bad input, said before the first sample
        self._said: str | None = None
        # the last answer to "is the followed OpenSM the master" (None: not asked of it yet),
        # the OpenSM it was asked of, and when (monotonic)
        self._standby: Finding | None = None
        self._asked: tuple[OsmProcess, float] | None = None

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
        its port (while one reads it, `standby` asks, less often). An sminfo that hangs (a
        loaded SM) is no answer, as for status: no finding."""
        if self.osm is not None:
            return None
        try:
            master = master_sm(env, at)
        except ProcessError:
            return None
        return other_config_finding(self.conf, None, at, master)

    def standby(self, env: dict[str, str] | None, at: LocalPort) -> Finding | None:
        """`standby` (health.standby_finding) while the OpenSM that reads the file, on `at`, is
        not the master SM: another SM runs the subnet from its own files, and the shares are
        judged against a plan nobody runs. One line on stderr when that changes. sminfo costs
        a process and two SMPs (10 ms on ibsim, docs/monitor.md), but one that hangs holds the
        sample up to its 30 s timeout: it is asked at most every ROLE_EVERY seconds while the
        OpenSM is master, at every sample while it is not or none answered."""
        osm = self.osm
        if osm is None or (self._asked is not None and self._asked[0] != osm):
            self._standby, self._asked = None, None  # another OpenSM (or none): asked of it at once
        if osm is None:  # none reads it: `elsewhere` asks instead
            return None
        now = time.monotonic()
        if self._asked is not None and self._standby is None and now - self._asked[1] < ROLE_EVERY:
            return None
        try:
            master = master_sm(env, at)
        except ProcessError:
            master = None
        if master is None:
            # no answer (sminfo hung, or asked a master just gone: B stopped, A not master yet) is
            # not A's return: the last answer stands, and the next sample asks again
            return self._standby
        found, was = standby_finding(self.conf, osm.pid, at, master), self._standby
        if found is not None and (was is None or was.message != found.message):
            self._warn(f"ibqos: {found.message}")
        elif found is None and was is not None:
            self._warn(f"ibqos: {role_of(osm.pid, at, master)[1]} again: the plan of {self.conf} is in force")
        self._standby, self._asked = found, (osm, now)
        return found

    def _line(self, found: OsmProcess | None) -> str | None:
        old = f"OpenSM pid {self.osm.pid}" if self.osm is not None else "no OpenSM"
        if found is None:
            if self.osm is None:
                return None  # none ran before either
            return f"ibqos: {old} (reading {self.conf}) is gone and none reads it now: monitoring on"
        return f"ibqos: {old} was reading {self.conf}; now following OpenSM pid {found.pid}: {' '.join(found.argv)}"
