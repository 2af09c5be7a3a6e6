"""Finishing or undoing what a killed `ibqos apply` left, from its journal.

Called with the configuration's lock held, by the next `ibqos apply` and by
`ibqos status --opensm-conf`. What it does per journal state:

    intent, paths still on `previous`   nothing went live: drop the staged version
    intent (flip done), swapped         new files on disk, maybe not live: heavy sweep, then
    swept                               read back and verify against the version's plan;
                                        on a mismatch, roll back to `previous`
    rollback                            finish the rollback: flip, sweep, compare with the
                                        fabric saved before the flip

Finishing rather than undoing is the choice for a new set that is already on disk: it is
what the admin asked for, and the verification decides whether it stays. A set that never
reached the disk is dropped, since nothing was live.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ibqos import osmconf
from ibqos.apply.confset import ConfigSet, state_dir_for
from ibqos.apply.history import events
from ibqos.apply.journal import Journal
from ibqos.apply.journal_entry import Entry
from ibqos.apply.lock import LockError, apply_lock
from ibqos.apply.opensm_ctl import heavy_sweep, require_plugin, resolve_pid
from ibqos.apply.sm_role import master_watch, opensm_port, require_master
from ibqos.apply.syslog import log_line
from ibqos.conformance import diff_programmed, expected_from_plan, mtu_findings
from ibqos.errors import ExternalError, IbqosError, VerificationFailed
from ibqos.fabric.compare import diff
from ibqos.fabric.dla_record import record_dir
from ibqos.fabric.groups_in_force import record_in
from ibqos.fabric.live import read_live
from ibqos.fabric.local_port import LocalPort
from ibqos.plan import load_plan


@dataclass
class FabricAccess:
    """How to reach OpenSM and the fabric: its pid, the read-back environment, the timeout,
    and the OpenSM's local port (None: found when first needed, from the pid's command line,
    else the `guid` of `conf`, its opensm.conf)."""

    pid: int | None
    env: dict[str, str] | None
    sweep_timeout: float = 120
    port: LocalPort | None = None
    conf: Path | None = None
    unit: str | None = None  # --service's: how a refusal says to restart this OpenSM

    def port_of(self, pid: int | None) -> LocalPort:
        """The port OpenSM `pid` binds, the one every read-back and diag goes out of."""
        if self.port is None:
            # read only now: a BROKEN version's dangling opensm.conf is reported, not read
            opts = osmconf.options(self.conf) if self.conf is not None and self.conf.is_file() else {}
            self.port = opensm_port(pid, opts, self.env)
        return self.port

    def sweep(self, pid: int, dumps: Path) -> float:
        """A heavy sweep of OpenSM `pid`, ended early (NotMaster) when another SM takes the
        subnet over meanwhile: a standby ends no sweep."""
        watch = master_watch(pid, self.port_of(pid), self.env)
        return heavy_sweep(pid, dumps, timeout=self.sweep_timeout, watch=watch)


def verify_plan_of(cs: ConfigSet, version: str, env: dict[str, str] | None, dumps: Path, at: LocalPort) -> list[str]:
    """Differences between the live fabric and the plan stored with `version`: tables, and
    links below the plan's MTU (as apply's own verification). When there are none, the fabric
    read back is kept as the version's verified fabric (its planned links)."""

    plan_file = cs.state / version / "plan.json"
    if not plan_file.exists():
        raise ExternalError(f"{plan_file} is missing: cannot verify {version}")
    fabric, plan = read_live(env, at=at), load_plan(plan_file)
    record = record_in(dumps)  # the groups dla routed with (docs/groups.md), where the sweep was timed
    diffs = diff_programmed(fabric, expected_from_plan(plan), record=record)
    diffs += [str(f) for f in mtu_findings(fabric, plan.fabric.mtu)]
    if not diffs:
        cs.save_verified_fabric(version, fabric)
    return diffs


def _dumps(entry: Entry, pid: int) -> Path:
    """Where OpenSM writes the plugin's record (journals from before it was kept: its env)."""
    return Path(entry.dumps) if entry.dumps else record_dir({}, pid)


def no_hook(point: str) -> None:
    """Apply's default hook (apply.run): nothing happens at a step's start or a journal state."""


def restore(
    cs: ConfigSet, journal: Journal, entry: Entry, io: FabricAccess, hook: Callable[[str], None] = no_hook
) -> str:
    """Roll back to entry.previous, sweep, and prove the fabric is as it was before the flip
    (when that read-back was saved). Returns what it proved; raises if the fabric differs.
    `hook`: Apply's, called as the journal says "rollback" (apply.run)."""

    if entry.previous is None:
        raise ExternalError(f"{journal.path}: {entry.version} has no previous version to roll back to")
    pid = io.pid if io.pid is not None else entry.opensm_pid
    journal.write(entry, "rollback")
    hook("journal:rollback")
    cs.flip(entry.previous)
    io.sweep(pid, _dumps(entry, pid))
    before = journal.load_before()
    if before is None:
        journal.write(entry, "rolled-back")
        return "swept (no earlier read-back to compare with)"
    back = read_live(io.env, at=io.port_of(pid))
    left = [d for d in diff(before, back, vlarb=True) if "sl2vl" in d or "vlarb" in d]
    if left:
        raise ExternalError(f"rollback to {entry.previous} did NOT restore the fabric: {left[0]}")
    journal.write(entry, "rolled-back")
    return "fabric verified as before"


def recover(
    cs: ConfigSet, io: FabricAccess, hook: Callable[[str], None] = no_hook, standby: bool = False
) -> str | None:
    """One line saying what a killed apply left and what was done, or None if nothing was.
    The line also goes to the system log: the killed apply could not send its own.
    `standby`: for `apply --standby`, which signals and reads nothing (see _close_for_standby)."""

    line = _recover(cs, io, hook, standby)
    if line:
        log_line(f"recovered {cs.state}: {line}")
    return line


def _close_for_standby(cs: ConfigSet, journal: Journal, entry: Entry, found: str) -> str:
    """`apply --standby` over an unfinished apply (killed, or ended by a handover: its SM is a
    standby now, or stopped): nothing is signalled or read, the new version supersedes it.
    A rollback's files go back to `previous`, as it would have; a new set on disk stays as
    a standby's, unswept, under the version staged next."""
    if entry.state == "rollback" and entry.previous is not None:
        cs.flip(entry.previous)
        journal.write(entry, "rolled-back")
        return f"{found}: its files are back on {entry.previous} (unswept: --standby sweeps nothing)"
    journal.write(entry, "standby")
    return f"{found}: {entry.version} stays as staged for a standby, unswept"


def _recover(cs: ConfigSet, io: FabricAccess, hook: Callable[[str], None], standby: bool) -> str | None:
    journal = Journal(cs.state)
    entry = journal.read()
    events(cs.state)  # a history a newer ibqos wrote is refused before anything changes
    if entry is None or entry.done:
        return None
    found = f"found apply of {entry.version} (pid {entry.apply_pid}) stopped at '{entry.state}'"
    current = cs.current_version()
    if entry.state == "intent" and current == entry.previous:
        cs.discard(entry.version)
        journal.write(entry, "discarded")
        return f"{found}: nothing had gone live; dropped {entry.version}, {current} stays"
    if standby:
        return _close_for_standby(cs, journal, entry, found)
    try:
        io.pid = pid = resolve_pid(io.pid if io.pid is not None else entry.opensm_pid, None)
    except ExternalError as e:
        if io.pid is not None:
            raise
        # OpenSM restarted since (systemd, a reboot): its new PID is not in the journal
        raise ExternalError(
            f"{found}, and the OpenSM it signalled is gone ({e}): give --pid or --service of the "
            "running OpenSM to finish it"
        ) from e
    # a standby (it handed over since) sweeps nothing: say so instead of waiting for a sweep
    require_master(pid, io.port_of(pid), io.env)
    # an OpenSM on another release's plugin (upgraded since the apply was killed) would sweep
    # and be verified through a plugin that is not this ibqos's: the journal stays for after
    # its restart, as apply refuses it
    require_plugin(pid, _dumps(entry, pid), io.unit)
    if entry.state == "rollback":
        proved = restore(cs, journal, entry, io, hook)
        return f"{found}: finished the rollback to {entry.previous}, {proved}"
    if current != entry.version:
        raise ExternalError(
            f"{found}, but {cs.current} points at {current}: changed by hand; fix the link, then remove the journal"
        )
    try:
        if entry.state in ("intent", "swapped"):
            io.sweep(pid, _dumps(entry, pid))
            journal.write(entry, "swept")
        diffs = verify_plan_of(cs, entry.version, io.env, _dumps(entry, pid), io.port_of(pid))
        if diffs:
            raise VerificationFailed(f"the fabric differs from the plan on {len(diffs)} port(s), first: {diffs[0]}")
    except IbqosError as e:
        proved = restore(cs, journal, entry, io, hook)
        return f"{found}: {entry.version} failed ({e}); rolled back to {entry.previous}, {proved}"
    journal.write(entry, "verified")
    return f"{found}: swept, read back and verified {entry.version}; it stays"


def check_and_recover(opensm_conf: Path, io: FabricAccess) -> str:
    """For `ibqos status --opensm-conf`: one line on the configuration's state, after finishing
    or undoing a killed apply. A running apply (lock held) is left alone."""

    cs = ConfigSet({}, state_dir_for(opensm_conf))
    if not cs.state.is_dir():
        return f"{opensm_conf}: not managed by ibqos apply yet"
    try:
        with apply_lock(cs.state, timeout=0):
            line = recover(cs, io)
    except LockError as e:
        if e.holder is not None:
            return f"{opensm_conf}: an apply is running ({e}); nothing recovered"
        # a monitoring user, or a read-only /etc: the state can be read, not changed
        entry = Journal(cs.state).read()
        if entry is not None and not entry.done:
            raise ExternalError(
                f"{e.path}: {e.reason}, and an apply of {entry.version} stopped at '{entry.state}': "
                "run this as a user who may write there to finish or roll it back"
            ) from e
        line = None
    if line:
        return f"recovered: {line}"
    entry = Journal(cs.state).read()
    last = f"; last apply {entry.version}: {entry.state}" if entry else ""
    if cs.current_version() is None:  # ibqos.d/ holds only the lock of an apply refused early
        return f"{opensm_conf}: not managed by ibqos apply yet{last}"
    return (
        f"{opensm_conf}: configuration {cs.current_version()}{_plan_hash(cs)}, "
        f"{len(cs.versions())} version(s) kept{last}"
    )


def _plan_hash(cs: ConfigSet) -> str:
    """' (plan sha256 …)' of the current version, as apply recorded it: a master and its
    standby run the same version when the hashes agree."""
    v = cs.current_version()
    sha = cs.meta(v).plan_sha256 if v else None
    return f" (plan sha256 {sha})" if sha else ""


def current_tampered(opensm_conf: Path) -> str | None:
    """One line when the version the configuration runs on was changed since ibqos wrote it,
    or a managed path no longer reads it (OpenSM would read the hand edit at its next sweep)."""

    cs = ConfigSet({}, state_dir_for(opensm_conf))
    return cs.damage_line()
