"""Which SM is master, as the fabric says, and whether the OpenSM apply signals is it.

A standby OpenSM (a higher-priority SM took over, or it started second) sweeps nothing: a
SIGHUP only wakes its polling of the master, so no heavy sweep ever ends, and the plugin
record it wrote while it was master stays (often at `sweeping`, the sweep the handover cut
short). OpenSM 3.3.23 tells its plugins nothing of the handover, so the fabric is asked, as
an admin would ask it: `sminfo` reads the SMInfo of the SM at the local port's MasterSMLID
(its GUID, LID, priority and state), asked out of the OpenSM's own port. That port is its
command line's `-g/--guid`, else opensm.conf's `guid`, else the port OpenSM binds when told
none; `opensm_port` is the one place that decides it (ibqos.fabric.local_port maps it to a
CA and port number), for every fabric access of apply, rollback and status.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import osmconf
from ..errors import ExternalError, ProcessError
from ..fabric.local_port import LocalPort, port_of
from ..paths import require_tool
from ..proc import run_command
from .osm_process import OsmProcess
from .service import opensm_options

_SMINFO = re.compile(r"sm lid (\d+) sm guid (0x[0-9a-fA-F]+), activity count \d+ priority (\d+) state \d+ (\S+)")


@dataclass(frozen=True)
class MasterSm:
    lid: int
    guid: int
    priority: int
    state: str  # sminfo's word: SMINFO_MASTER

    def __str__(self) -> str:
        return f"0x{self.guid:016x} (lid {self.lid}, priority {self.priority})"


def master_sm(env: dict[str, str] | None, at: LocalPort | None) -> MasterSm | None:
    """The master SM of `at`'s subnet as `sminfo` reports it, or None when no SM answers.
    `at` None: libibumad's first port, as the read-back takes it."""
    cmd = [require_tool("sminfo", "infiniband-diags"), *(at.diag_args() if at is not None else ())]
    cp = run_command(cmd, env=env, timeout=30, check=False)
    m = _SMINFO.search(cp.stdout)
    if cp.returncode != 0 or m is None:
        return None
    return MasterSm(int(m[1]), int(m[2], 16), int(m[3]), m[4])


def opensm_port(pid: int | None, conf_opts: dict[str, str], env: dict[str, str] | None) -> LocalPort:
    """The local port OpenSM `pid` binds (see the module's docstring); a GUID that is no port
    of this host is refused (exit 2). `pid` None: an OpenSM not running, from its file."""
    osm = OsmProcess.of(pid) if pid is not None else None
    given = given_guid(osm, conf_opts, pid)
    return port_of(given[0], env, given[1]) if given else port_of(None, env, "OpenSM's port")


def given_guid(osm: OsmProcess | None, conf_opts: dict[str, str], pid: int | None = None) -> tuple[int, str] | None:
    """The port GUID OpenSM `osm` is told to bind, and where it is told: its command line's
    -g/--guid, else its opensm.conf's `guid` (`conf_opts`); None when neither names one (it
    binds the first port that is up, which only the host's ports say)."""
    argv = osm.argv if osm is not None else ()
    for given, where in (
        (opensm_options(list(argv[1:])).get("guid"), f"OpenSM (pid {osm.pid if osm else pid}) -g/--guid"),
        (conf_opts.get("guid"), "opensm.conf guid"),
    ):
        try:
            guid = int(given or "0", 16)
        except ValueError:
            continue
        if guid:
            return guid, where
    return None


def conf_port(conf: Path, osm: OsmProcess | None, env: dict[str, str] | None) -> LocalPort:
    """The port of the OpenSM that reads `conf` (for a command given only the file): the
    running one that reads it (`osm`, osm_process.reader), else what the file says (its
    `guid`, else OpenSM's pick)."""
    return opensm_port(osm.pid if osm is not None else None, osmconf.options(conf), env)


class NotMaster(ExternalError):
    """The OpenSM apply signals is not (or no longer) the master: no heavy sweep will end."""


def role_line(pid: int, at: LocalPort, env: dict[str, str] | None) -> tuple[bool, str]:
    """(whether OpenSM `pid`, on port `at`, is the master, one line saying which SM is).
    Unknown counts as master: the plugin record's wait then judges, as before."""
    return role_of(pid, at, master_sm(env, at))


def role_of(pid: int, at: LocalPort, master: MasterSm | None) -> tuple[bool, str]:
    """role_line for the master SM `sminfo` reported (None: none answered)."""
    if master is None:
        return True, "master SM: none answers sminfo"
    if at.guid == master.guid and master.state in ("SMINFO_STANDBY", "SMINFO_NOTACTIVE"):
        # our port's MasterSMLID still names us, but we say we are not (just handed over)
        return False, f"master SM: none yet; this OpenSM (pid {pid}, port 0x{at.guid:016x}) is {master.state}"
    if at.guid == master.guid:
        return True, f"master SM: {master}, this OpenSM (pid {pid})"
    return False, f"master SM: {master}; this OpenSM (pid {pid}, port 0x{at.guid:016x}) is not it (standby)"


def require_master(pid: int, at: LocalPort, env: dict[str, str] | None) -> None:
    """Refuse, before anything changes, to signal an OpenSM that is not the master."""
    master, line = role_line(pid, at, env)
    if not master:
        raise NotMaster(
            f"{line}: a standby sweeps nothing, so no SIGHUP would take effect; apply on the "
            "master's host, or 'ibqos apply PLAN --standby' here to stage the version for when it takes over"
        )


def master_watch(pid: int, at: LocalPort, env: dict[str, str] | None, every: float = 1.0) -> Callable[[], None]:
    """For a wait on OpenSM `pid`'s sweep: a check, asking sminfo at most every `every`
    seconds, that raises NotMaster (the role line) once another SM has taken the subnet over,
    since a standby ends no sweep and the wait would run out its whole timeout."""
    last = [float("-inf")]

    def check() -> None:
        now = time.monotonic()
        if now - last[0] < every:
            return
        last[0] = now
        try:
            master, line = role_line(pid, at, env)
        except ProcessError:  # sminfo hung (a loaded SM): unknown, so the sweep's record judges
            return
        if not master:
            raise NotMaster(line)

    return check
