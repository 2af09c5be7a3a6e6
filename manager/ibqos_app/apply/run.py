"""The apply pipeline: recover → render → validate → snapshot → adopt → stage → flip → sweep
→ read back → verify → prune. `ibqos rollback` is the same pipeline with a stored version's
files in place of the rendered plan (ApplyRequest.rollback_to).

Each step is a small method `stage_<step>`; the one driver (ibqos.pipeline) runs them in
order and times them, and `run()` holds the configuration's lock from recovery to pruning.
A defect is an exception (VerificationFailed: exit 1, mapped in ibqos_app.cli). The journal
(`journal.py`) records each state before the step it names, so a crash anywhere is finished
or undone by the next apply or status (`recover.py`). A failure after the flip restores the
previous version, sweeps again and proves the fabric is back as it was. `Apply(hook=…)` is
called with each step's name as it starts (the driver's `before` hook) and with
`journal:<state>` right after the journal says <state>: the kill -9 tests' wrapper
(manager/tests/apply_fault.py) kills the process there; the product passes none.

What an apply will not do without being told: build on a current version whose files were
changed by hand (--accept-edits), or take partitions (P_Keys) off the fabric
(--allow-pkey-removal). An unchanged plan writes nothing. Each apply that gets past its
options logs one line to the system log (syslog.py); a dry run writes nothing anywhere.
"""

from __future__ import annotations

import difflib
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from ibqos import osmconf
from ibqos.apply.confset import ConfigSet, sha256_hex, state_dir_for
from ibqos.apply.journal import Journal
from ibqos.apply.journal_entry import Entry
from ibqos.apply.lock import LockError, apply_lock
from ibqos.apply.opensm_ctl import RESTART_ONLY, plugin_loaded, require_plugin, require_record, resolve_pid
from ibqos.apply.osm_process import OsmProcess, check_target, dump_dir, reader, running_options, sms_partitions
from ibqos.apply.service import (
    OSM_DEFAULT_QOS_POLICY_FILE,
    is_whole_conf,
    opensm_defaults,
    opensm_options,
    resolve,
)
from ibqos.apply.sm_role import NotMaster, master_sm, opensm_port, require_master
from ibqos.apply.stamp import who
from ibqos.apply.syslog import log_line
from ibqos.apply.validate import validate_opensm_conf, validate_plugin_tables
from ibqos.apply.version_meta import VersionMeta
from ibqos.conformance import data_vls_shortfall, diff_programmed, expected_from_plan, mtu_findings
from ibqos.docfile import made_dir, write_atomic
from ibqos.errors import ExternalError, IbqosError, InputError, InternalError, VerificationFailed, bug_line
from ibqos.fabric.dla_record import own_record, record_dir
from ibqos.fabric.groups_in_force import groups_in_force, record_in
from ibqos.fabric.ipoib_groups import broadcast_sls
from ibqos.fabric.live import read_live
from ibqos.health import Judged, Routing, ipoib_sl_findings, routing_findings
from ibqos.interrupt import Interrupted, deferred
from ibqos.osmlog import engine_since, held_mark, split_known_failures, sweep_failures
from ibqos.osmplugin import not_loaded_line, replaced_line
from ibqos.osmunit import restart_hint
from ibqos.pipeline import Hooks, Pipeline, produced
from ibqos.plan import load_plan
from ibqos.plan.check import check_ipoib_of
from ibqos.policy.partitions import DEFAULT_PKEY, partitions_of, pkeys_in
from ibqos.redline import needs_path_sls
from ibqos.render import render_plan
from ibqos.verify.sa_paths import query_path_sls

from .recover import FabricAccess, no_hook, recover, restore

if TYPE_CHECKING:
    from ibqos.apply.service import ServiceTarget
    from ibqos.fabric.local_port import LocalPort
    from ibqos.fabric.model import Fabric
    from ibqos.findings import Finding
    from ibqos.plan import Plan

STEPS = ("recover", "render", "validate", "snapshot", "adopt", "stage", "flip", "sweep", "readback", "verify", "prune")
DEFAULT_KEEP = 10
DEFAULT_LOG = Path("/var/log/opensm.log")
ROLE_FILES = ("opensm.conf", "qos-policy.conf", "plugin-tables.conf")


@dataclass
class ApplyRequest:
    plan_path: Path
    opensm_conf: Path
    qos_policy: Path | None = None
    pid: int | None = None
    pidfile: Path | None = None
    dry_run: bool = False
    env: dict[str, str] | None = None  # for the read-back (ibsim: LD_PRELOAD etc.)
    sweep_timeout: float = 120
    keep: int = DEFAULT_KEEP  # version directories kept in ibqos.d/
    lock_timeout: float = 600  # seconds to wait for another apply to finish
    service: str | None = None  # opensm@GUID: conf, log and PID from the unit
    init_conf: bool = False  # create the unit's missing opensm.conf, then stop
    rollback_to: str | None = None  # ibqos rollback: this stored version instead of a plan
    allow_pkey_removal: bool = False  # partitions the fabric carries may go
    accept_edits: bool = False  # build on a current version changed by hand
    standby: bool = False  # a standby SM's host: swap the files in, no SIGHUP, no read-back


@dataclass
class ApplyState:
    plan: Plan | None = None  # None: a rollback to the admin's original files
    files: dict[str, str] = field(default_factory=dict)
    paths: dict[str, Path] = field(default_factory=dict)
    confset: ConfigSet | None = None
    previous: str | None = None
    version: str | None = None
    before: Fabric | None = None  # fabric read back before the flip
    after: Fabric | None = None  # fabric read back after the sweep
    log: Path = DEFAULT_LOG
    dumps: Path = Path("/var/log")  # OpenSM's dump_files_dir: the plugin's record, the sweep's end
    pid: int = 0
    journal: Journal | None = None
    entry: Entry | None = None
    recovered: str | None = None  # what recovery found and did, if anything
    pruned: list[str] = field(default_factory=list)
    service: ServiceTarget | None = None  # with --service
    log_override: Path | None = None  # the command line's --log_file (the unit's, or the process's)
    plan_text: str | None = None  # plan.json as stored with the version (None: an original)
    removed: set[str] = field(default_factory=set)  # managed roles the new set no longer has
    pkeys_gone: list[int] = field(default_factory=list)
    unchanged: bool = False  # same files as the current ones: nothing written
    outcome: str = ""  # the system log's word for how it ended
    interrupt_said: bool = False  # interrupted() has said how a signal left things
    swept_at: float | None = None  # time.time() as the sweep was asked for
    engine: str | None = None  # the engine that configured the tables in that sweep, as logged
    port: LocalPort | None = None  # the OpenSM's local port: every fabric access goes out of it

    @property
    def plan_sha256(self) -> str:
        """Of the plan stored with the version ("" for the admin's originals), as kept in its
        meta.json: a master and its standby hold the same version when theirs agree."""
        return sha256_hex(self.plan_text.encode()) if self.plan_text else ""


class Apply:
    def __init__(
        self, req: ApplyRequest, echo: Callable[[str], None] = print, hook: Callable[[str], None] = no_hook
    ) -> None:
        self.req, self.echo, self.hook = req, echo, hook
        self.s = ApplyState()
        self.pipeline = Pipeline(STEPS, Hooks(before=hook))

    @property
    def confset(self) -> ConfigSet:
        return produced(self.s.confset, "the configuration set (stage render)")

    @property
    def port(self) -> LocalPort:
        return produced(self.s.port, "the OpenSM's local port (resolved before the lock)")

    @property
    def journal(self) -> Journal:
        return produced(self.s.journal, "the journal (stage adopt or stage)")

    # ---- driver ----------------------------------------------------------
    def run(self) -> ApplyState:
        try:
            return self._run()
        except KeyboardInterrupt as e:  # a signal before the lock: nothing was staged
            if not self.s.interrupt_said:
                self.interrupted(e)
            raise

    def _run(self) -> ApplyState:
        if self.req.service and self._target_service(self.req.service):
            return self.s  # --init-conf: the whole file written (or shown), restart next
        if self.req.dry_run:
            if not self.s.pid:  # the files an apply would write follow its OpenSM (-Y, relative paths)
                with suppress(IbqosError):  # ... when one is named: a dry run needs none
                    self.s.pid = resolve_pid(self.req.pid, self.req.pidfile)
            port = None
            if self.s.pid:  # the OpenSM must read this file, alone, on a port of this host: as apply
                check_target(self.s.pid, self.req.opensm_conf)
                port = opensm_port(self.s.pid, osmconf.options(self.req.opensm_conf), self.req.env)
            self.pipeline.run(self, ("render", "validate"))
            self.show_diff()
            if port is not None:
                # apply refuses, before it writes anything, a standby (it would sweep nothing)
                # and an OpenSM on another release's plugin (the deployed plan too): the
                # preview ends as the apply would, exit 3
                require_master(self.s.pid, port, self.req.env)
                require_plugin(self.s.pid, self.s.dumps, self._unit())
                # no sweep moves a broadcast group to a changed sl=: said before anything is written
                for f in self._ipoib_groups(port) or []:
                    self.echo(f"note: {f.message}; apply keeps the new version and ends on this line, exit 1")
            return self.s
        try:
            if self.req.standby:
                # a missing or unreadable file is refused before the lock makes ibqos.d/ beside it
                osmconf.read(self.req.opensm_conf)
                self._refuse_a_master()
                self.run_standby()
                if not self.s.unchanged:
                    self.s.outcome = f"staged {self.s.version} for a standby SM"
                return self.s
            if not self.req.service:
                self.s.pid = resolve_pid(self.req.pid, self.req.pidfile)
            osm = check_target(self.s.pid, self.req.opensm_conf)
            if osm is not None and self.s.log_override is None:
                self.s.log_override = osm.log  # -f / --log_file beats the file's log_file
            # its subnet, through its port: refused (exit 2) before anything is written
            self.s.port = opensm_port(self.s.pid, osmconf.options(self.req.opensm_conf), self.req.env)
            with self._lock():
                try:
                    self._locked()
                except KeyboardInterrupt as e:  # Ctrl-C, SIGTERM, SIGHUP (ibqos.interrupt)
                    self.interrupted(e)
                    raise
        except BaseException as e:
            self.s.outcome = self.s.outcome or f"failed: {e}"
            raise
        finally:
            self._syslog()
        return self.s

    def _locked(self) -> None:
        self.pipeline.run(self, ("recover", "render", "validate"))
        if not self._damaged() and self._unchanged():
            return
        try:
            self.pipeline.run(self, STEPS[STEPS.index("snapshot") : STEPS.index("flip") + 1])
        except OSError as e:  # a full or read-only /etc: say what failed and what went live
            where = e.filename or self.confset.state
            if self.s.version is not None and self.confset.current_version() == self.s.version:
                raise self._after_swap(e, "before its sweep") from e  # the journal still says 'intent'
            self._drop_unswapped()
            raise ExternalError(f"{where}: {e.strerror}: stopped before the swap, nothing changed") from e
        except Exception as e:
            if self.s.version is None or self.confset.current_version() != self.s.version:
                self._failed_before_swap(e)
            self._failed_after_swap(e)  # in the flip, past the swap (its journal line, its hook)
        try:
            try:
                self.pipeline.run(self, ("sweep", "readback", "verify"))
            except OSError as e:  # the journal or history could not be written: /etc filled up
                raise self._after_swap(e, f"at '{produced(self.s.entry, 'the journal entry').state}'") from e
            except Exception as e:
                self._failed_after_swap(e)
        finally:
            # a rolled-back version is pruned like any other
            self.pipeline.run(self, ("prune",))
        self.s.outcome = f"verified {self.s.version}"
        self._check_ipoib_groups(f"{self.s.version} stays, its tables verified")

    def _failed_before_swap(self, e: Exception) -> NoReturn:
        """Nothing went live: the staged version goes and the journal says 'discarded', as after
        a signal there (before, a bug left it at 'intent', for the next apply or status to find
        and drop). A bug is one line, exit 70, saying so; an ibqos error stays what it was."""
        self._drop_unswapped()
        if isinstance(e, IbqosError):
            raise e
        raise InternalError(f"{bug_line(e)}; stopped before the swap, nothing changed") from e

    def _failed_after_swap(self, e: Exception) -> NoReturn:
        """The new version is on disk: a failure goes back to the previous one, swept and
        proved, and so does a bug (any other exception: before, the new files stayed unswept,
        no SIGHUP, until a status). The bug is one line, exit 70, with what was done."""
        if isinstance(e, IbqosError):
            self.rollback(e)
        if self.s.entry is not None and self.s.entry.state == "verified":
            raise InternalError(f"{bug_line(e)}; {self.s.version} was verified and stays") from e
        try:
            self.rollback(InternalError(bug_line(e)))
        except ExternalError as failed:  # the rollback failed too: still the bug's exit code
            raise InternalError(str(failed)) from e

    def _after_swap(self, e: OSError, when: str) -> ExternalError:
        """A write that failed after the flip: the new version is on disk, and the journal's
        next reader (status, the next apply) finishes it once the write can succeed."""
        where = f"{e.filename or self.confset.state}: {e.strerror}"
        if self.s.entry is not None and self.s.entry.state == "verified":  # only its history line is missing
            return ExternalError(f"{where}: {self.s.version} was verified and stays; its history line is missing")
        return ExternalError(
            f"{where}: after the swap to {self.s.version}, {when}: the new files are on disk, unverified; once "
            f"there is room, 'ibqos status --opensm-conf {self.req.opensm_conf}' sweeps and verifies them, or "
            "rolls them back"
        )

    def _damaged(self) -> bool:
        """The current version changed by hand (confset.damage_line: TAMPERED, DRIFT, BROKEN) is
        built on only with --accept-edits (a rollback replaces it): exit 1 otherwise, nothing
        written. True when it is damaged and the apply goes on."""
        line = self.confset.damage_line()
        if line and not (self.req.accept_edits or self.req.rollback_to):
            raise VerificationFailed(
                f"{line}; --accept-edits builds on it (what the plan does not set is kept), "
                "'ibqos rollback VERSION' returns to a stored version"
            )
        if line:
            self.echo(f"note: {line}")
        return bool(line)

    def _holds_plan(self) -> bool:
        """The new set and its plan equal what the managed paths and the current version hold."""
        cs = self.confset
        # Files not yet adopted (no ibqos.d/current) are taken over by a full apply even when
        # they hold this plan: `status` and `history` need the version and its plan.
        if not cs.adopted():
            return False
        same = all(p.exists() and osmconf.read(p) == self.s.files[r] for r, p in self.s.paths.items())
        stored_plan = cs.current / "plan.json"
        same_plan = not self.s.plan_text or (stored_plan.is_file() and stored_plan.read_text() == self.s.plan_text)
        return same and same_plan

    def _say_unchanged(self) -> None:
        self.s.unchanged = True
        self.s.outcome = f"no change ({self.confset.current_version()})"
        self.echo(f"no change: {self.req.opensm_conf} and its files already hold this plan; nothing written")

    def _unchanged(self) -> bool:
        """The new set equals what the managed paths hold now: say so and write nothing."""
        if not self._holds_plan():
            return False
        # what this ibqos verifies is what the plugin OpenSM runs programs: one still running
        # another release's plugin is refused here too, not passed as 'no change'
        require_plugin(self.s.pid, self.s.dumps, self._unit())
        self._say_unchanged()
        # still held to the plan: read back (no sweep), as after an apply
        self.pipeline.run(self, ("readback",))
        self._check_plan()
        self._check_ipoib_groups("nothing written")
        return True

    def _check_ipoib_groups(self, done: str) -> None:
        """The partitions file this apply put in force against the SA's IPoIB broadcast groups
        (health.ipoib_sl_findings): OpenSM makes a group on its partition's sl= once, at its start,
        and no sweep changes it, so a changed sl= is verified only after a restart. Before, the
        apply said the fabric equals the plan, exit 0, with IPoIB's broadcast and multicast on the
        old SL. The version stays (rolling it back puts no group on its SL either): exit 1."""
        found = self._ipoib_groups(self.port)
        if found:
            more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
            self.s.outcome += ", IPoIB broadcast group SL not in force until OpenSM restarts"
            raise VerificationFailed(f"{found[0].message}{more}; {done}")
        if found is not None:
            self.echo(f"SA: every IPoIB broadcast group on its partition's sl= ({self.s.paths['partitions.conf']})")

    def _ipoib_groups(self, port: LocalPort) -> list[Finding] | None:
        """ipoib-sl of the new set's partitions file against the SA's groups now, asked out of
        `port`; None when not checked (no `ipoib` partition in it, or the SA did not answer)."""
        text, path = self.s.files.get("partitions.conf"), self.s.paths.get("partitions.conf")
        if not text or path is None:
            return None
        try:
            parts = partitions_of(text, path)
        except InputError:  # an admin's own file ibqos's parser refuses (a rollback to v0000): OpenSM's
            return None
        if not parts.ipoib_sl:
            return None
        try:
            sa = broadcast_sls(self.req.env, port)
        except ExternalError as e:
            self.echo(f"note: IPoIB broadcast groups' SLs not checked against {path}: {e}")
            return None
        return ipoib_sl_findings(parts, sa, restart_hint(self.s.pid, self._unit()))

    def _syslog(self) -> None:
        what = f"rollback to {self.req.rollback_to}" if self.req.rollback_to else "apply"
        sha = self.s.plan_sha256[:16] or "none"
        log_line(f"{what} {self.req.opensm_conf} plan sha256 {sha} by {who()}: {self.s.outcome or 'stopped'}")

    def _refuse_a_master(self) -> None:
        """--standby stages files no sweep proves, for an SM that reads them when it takes
        over. OpenSM 3.3.23 re-reads its configuration at every heavy sweep, not only at a
        SIGHUP (osm_state_mgr: osm_subn_rescan_conf_files; the policy and the plugin's table
        file too), so on the master any link that goes up or down would program them,
        unverified and with no rollback. The OpenSM is --pid/--pidfile/--service's, else the
        running one that reads the file; none running is a standby's stopped SM."""
        conf = self.req.opensm_conf
        if self.s.pid:
            pid: int | None = self.s.pid
        elif self.req.pid is not None or self.req.pidfile is not None:
            pid = resolve_pid(self.req.pid, self.req.pidfile)
        else:
            osm = reader(conf)
            pid = osm.pid if osm is not None else None
        if pid is None:
            return
        try:
            port: LocalPort | None = opensm_port(pid, osmconf.options(conf), self.req.env)
        except IbqosError:  # no port to ask through: the staging needs none, as before
            port = None
        master = master_sm(self.req.env, port) if port is not None else None
        if port is not None and master is not None and master.guid == port.guid and master.state == "SMINFO_MASTER":
            raise ExternalError(
                f"master SM: {master}, this OpenSM (pid {pid}) reading {conf}: it re-reads its files at "
                "every heavy sweep, so a link going up or down would program a version staged with "
                "--standby, unverified and with no rollback; apply without --standby here"
            )
        self._refuse_another_plugin(pid)

    def _refuse_another_plugin(self, pid: int) -> None:
        """The standby's OpenSM takes over with the plugin it loaded at its start, which must be
        this ibqos's, as a master's apply requires: its record (written at its first heavy
        sweep, master or not) names the release, and the file it mapped must still be the
        installed one (require_plugin); without a record, it must have loaded one at all
        (osmplugin). A standby restarts without touching the fabric: refused, exit 3, nothing
        written. Before, it took the version and would program it through that plugin."""
        dumps = dump_dir(self.req.opensm_conf, OsmProcess.of(pid), "give --pid or --service")
        if own_record(dumps, pid) is not None:
            require_plugin(pid, dumps, self._unit())
            return
        restart = restart_hint(pid, self._unit())
        if line := not_loaded_line(pid, restart) or replaced_line(pid, restart):
            raise ExternalError(line)

    def run_standby(self) -> None:
        """The same version a master runs, into a standby SM's configuration: validated and
        swapped in as one version, with the same plan hash and files, and no signal (a standby
        does not sweep; it reads them when it becomes master and starts its heavy sweep). As on
        the master, a version changed by hand is built on only with --accept-edits (before, a
        DRIFT file was stored and staged over, exit 0: the standby would take over without the
        edit it was running on), and a plan it already holds writes nothing (before: a new,
        identical version at each run)."""
        with self._lock():
            try:
                self.pipeline.run(self, ("recover", "render", "validate"))
                if not self._damaged() and self._holds_plan():
                    self._say_unchanged()
                    return
                try:
                    self.pipeline.run(self, ("adopt", "stage", "flip", "prune"))
                except OSError:
                    raise  # said as the system said it, as before
                except Exception as e:  # a bug before the swap leaves no staged version here either
                    if self.s.version is None or self.confset.current_version() != self.s.version:
                        self._failed_before_swap(e)
                    raise
            except KeyboardInterrupt as e:
                self.interrupted(e)
                raise

    @contextmanager
    def _lock(self) -> Iterator[None]:
        """The configuration's lock; where it cannot be made (a read-only or foreign /etc) one
        line naming the path, exit 3: nothing was written yet."""
        with ExitStack() as held:
            try:
                held.enter_context(
                    apply_lock(state_dir_for(self.req.opensm_conf), timeout=self.req.lock_timeout, echo=self.echo)
                )
            except LockError as e:
                if e.holder is not None:
                    raise
                raise ExternalError(f"{e}, nothing changed") from e
            yield

    def _unit(self) -> str | None:
        """--service's unit: how the refusals say to restart this OpenSM."""
        return self.s.service.unit if self.s.service is not None else None

    def _access(self) -> FabricAccess:
        return FabricAccess(self.s.pid, self.req.env, self.req.sweep_timeout, self.s.port, unit=self._unit())

    def _journal(self, state: str) -> None:
        self.journal.write(produced(self.s.entry, "the journal entry (stage stage)"), state)
        self.hook(f"journal:{state}")

    # ---- Debian's opensm@GUID.service ---------------------------------------------
    def _target_service(self, unit: str) -> bool:
        """Point the request at what the unit runs. True when --init-conf wrote the missing
        opensm.conf (OpenSM reads it only at start: the caller stops there)."""

        t = resolve(unit)
        self.s.service = t
        self.req.opensm_conf = t.conf
        self.s.log_override = t.log
        if not t.conf.exists():
            if self.req.init_conf:
                self._init_conf(t)
                return True
            raise ExternalError(
                f"{t.conf} does not exist, so {t.unit} runs on OpenSM's defaults: "
                f"'ibqos apply PLAN --service {self.req.service} --init-conf' writes "
                f"it whole (OpenSM's defaults with the plan), then "
                f"{t.restart_hint()}"
            )
        if self.req.init_conf:
            raise InputError("exists: --init-conf only creates a missing configuration", file=t.conf)
        text = osmconf.read(t.conf)
        if not is_whole_conf(text):
            raise InputError(
                "holds only some of OpenSM's options (an ibqos fragment?), not a "
                "whole opensm.conf: merge it into 'opensm -c' output first",
                file=t.conf,
            )
        if t.pid is None and not (self.req.dry_run or self.req.standby):  # a standby's SM may be stopped
            raise ExternalError(f"{t.unit} is not running (no process runs {' '.join(t.argv)})")
        self.s.pid = t.pid or 0
        return False

    def _init_conf(self, t: ServiceTarget) -> None:
        """The unit's opensm.conf, whole: OpenSM's defaults (`opensm -c`) with the plan's options
        and its files beside it. Options OpenSM reads only at start take effect on restart."""

        plan = load_plan(self.req.plan_path)
        conf_dir = t.conf.parent
        with tempfile.TemporaryDirectory(prefix="ibqos-init-") as tmp:
            rendered = render_plan(plan, Path(tmp))
            fragment = osmconf.parse(Path(rendered["opensm.conf"]).read_text())
            side = {
                "qos-policy.conf": conf_dir / "qos-policy.conf",
                "plugin-tables.conf": conf_dir / "ibqos-tables.conf",
            }
            if "partitions.conf" in rendered:
                side["partitions.conf"] = conf_dir / "partitions.conf"
            texts = {name: Path(rendered[name]).read_text() for name in side}
        updates = dict(fragment, qos_policy_file=str(side["qos-policy.conf"]), force_log_flush="TRUE")
        # always the plugin, whatever engine routes: its record is how apply sees a sweep end
        updates.update(event_plugin_name="ibqos", event_plugin_options=str(side["plugin-tables.conf"]))
        if "partitions.conf" in side:
            updates["partition_config_file"] = str(side["partitions.conf"])
        merged = osmconf.merge(opensm_defaults(), updates, f"ibqos apply {plan.policy_sha256[:12]}")
        for path in side.values():
            if path.exists():
                raise InputError(f"exists beside a missing {t.conf.name}: move it away first", file=path)
        if self.req.dry_run:
            for path, text in ((t.conf, merged), *((side[n], texts[n]) for n in side)):
                self._echo_diff(path, "", text, "added")
            self.echo(f"dry run: nothing written; without --dry-run this writes {t.conf} and its files")
            return
        with made_dir(conf_dir):
            for name, path in side.items():
                write_atomic(path, texts[name])
            write_atomic(t.conf, merged)
        self.s.plan_text, self.s.outcome = self.req.plan_path.read_text(), f"wrote {t.conf} (--init-conf)"
        self._syslog()
        self.echo(f"wrote {t.conf} (OpenSM's defaults with the plan) and " + ", ".join(str(p) for p in side.values()))
        self.echo(
            f"OpenSM reads them at start: {t.restart_hint()}, then "
            f"'ibqos apply {self.req.plan_path} --service {self.req.service}' to verify"
        )

    # ---- steps -------------------------------------------------------------
    def stage_recover(self) -> None:
        cs = ConfigSet(self.s.paths, state_dir_for(self.req.opensm_conf))
        line = recover(cs, self._access(), hook=self.hook, standby=self.req.standby)
        if line:
            self.s.recovered = line
            self.echo(f"recovered: {line}")

    def stage_render(self) -> None:
        conf_path = self.req.opensm_conf
        current = osmconf.read(conf_path)
        # what the running OpenSM reads: its command line's -Y, -P, -R, -l, --dump_files_dir over the file
        osm = OsmProcess.of(self.s.pid) if self.s.pid else None
        opts = running_options(conf_path, current, osm)
        if self.req.rollback_to:
            self._stored_set(conf_path, opts)
            self._finish_render(conf_path, opts)
            return
        self.s.plan = load_plan(self.req.plan_path)
        self.s.plan_text = self.req.plan_path.read_text()
        with tempfile.TemporaryDirectory(prefix="ibqos-apply-") as tmp:
            rendered = render_plan(self.s.plan, Path(tmp))
            fragment = osmconf.parse(Path(rendered["opensm.conf"]).read_text())
            policy = Path(rendered["qos-policy.conf"]).read_text()
            tables = Path(rendered["plugin-tables.conf"]).read_text()
            partitions = Path(rendered["partitions.conf"]).read_text() if "partitions.conf" in rendered else None
        if not plugin_loaded(opts):
            # its record is how apply learns that the sweep ended and what was programmed
            raise ExternalError(
                f"the running OpenSM does not load the ibqos plugin ({conf_path}: "
                f"event_plugin_name is {opts.get('event_plugin_name', '(unset)')!r}, without "
                "'ibqos'): add it (beside other plugins, space separated) and restart OpenSM once, then apply"
            )
        for key in ("routing_engine",):
            if key in fragment and opts.get(key, "") != fragment[key]:
                raise ExternalError(
                    f"{conf_path}: {key} is {opts.get(key, '(unset)')!r}, the plan needs "
                    f"{fragment[key]!r}; OpenSM reads it only at start: change it and restart"
                )
        engines = fragment.get("routing_engine", "").split(",")
        if engines[0] == "dla" and osmconf.lmc(opts):
            # dla refuses LMC > 0 (one LID per port) at every sweep: the fallback would route
            # on its path SLs, not the plan's classes, and apply could only roll back
            raise ExternalError(
                f"{conf_path}: lmc is {opts['lmc']!r}, but dla routes one LID per port: it would refuse "
                f"the fabric and OpenSM route it with {', '.join(engines[1:]) or 'minhop'} instead, without "
                "the plan's classes; set lmc 0 and restart OpenSM, then apply"
            )
        paths = self._managed_paths(conf_path, opts)
        if partitions is None:
            self._check_sms_partitions(opts)
        qos_path, tables_path = paths["qos-policy.conf"], paths["plugin-tables.conf"]
        updates = {k: v for k, v in fragment.items() if k not in RESTART_ONLY}
        if osm is None or "qos_policy_file" not in osm.over_file:  # -Y's path is not the file's to name
            updates["qos_policy_file"] = str(qos_path)
        if partitions is not None:
            # OpenSM reads partition_config_file's path only at start (its option table marks
            # it not updatable) but the file's contents at every heavy sweep: apply writes the
            # plan's partitions at the path the running SM already reads.
            if not osmconf.is_set(opts, "partition_config_file"):
                raise ExternalError(
                    f"{conf_path} sets no partition_config_file and the plan has "
                    "partitions: set it and restart OpenSM once, then apply"
                )
            part_path = paths["partitions.conf"]
        # the sweep's ERR lines must be on disk when the plugin's record says it ended;
        # re-read at the sweep SIGHUP starts
        updates["force_log_flush"] = "TRUE"
        self.s.files = {
            "opensm.conf": osmconf.merge(current, updates, f"ibqos apply {self.s.plan.policy_sha256[:12]}"),
            "qos-policy.conf": policy,
            "plugin-tables.conf": tables,
        }
        self.s.paths = {"opensm.conf": conf_path, "qos-policy.conf": qos_path, "plugin-tables.conf": tables_path}
        if partitions is not None:
            self.s.files["partitions.conf"] = partitions
            self.s.paths["partitions.conf"] = part_path
        self._finish_render(conf_path, opts)

    def _check_sms_partitions(self, opts: dict[str, str]) -> None:
        """A plan without partitions leaves the SM's own file in force, and OpenSM creates each
        `ipoib` partition's broadcast group on its sl=: held to the plan's classes as the plan's
        own file is (plan.check), else IPoIB's broadcast and multicast run in another class
        than its unicast, unverified. A file ibqos's parser refuses is OpenSM's to judge."""
        parts = sms_partitions(opts)
        if parts is not None:
            check_ipoib_of(produced(self.s.plan, "the plan (stage render)"), parts)

    def _managed_paths(self, conf_path: Path, opts: dict[str, str]) -> dict[str, Path]:
        """Paths OpenSM never re-reads stay as they are; their contents are what changes. A
        path option set to `(null)` (as `opensm -c` writes it) is one OpenSM reads no file
        from: the tables and the QoS policy then need a restart first, as `routing_engine` does."""
        for key, what, name in (
            ("event_plugin_options", "table file for the ibqos plugin", "ibqos-tables.conf"),
            ("qos_policy_file", "QoS policy file", "qos-policy.conf"),
        ):
            # unset, OpenSM's default is NULL for the first, /etc/opensm/qos-policy.conf for the second
            if (key in opts or key == "event_plugin_options") and not osmconf.is_set(opts, key):
                raise ExternalError(
                    f"{conf_path}: {key} is {opts.get(key, '(unset)')!r}, so OpenSM reads no {what} and it "
                    f"reads this option only at start: set it to a path (e.g. {conf_path.parent / name}) and "
                    "restart OpenSM once, then apply"
                )
        # set (to a path: the loop above refused the rest) or, unset, OpenSM's compiled-in
        # default wherever this conf lives: never a file beside the conf that OpenSM never reads
        qos_read = Path(opts.get("qos_policy_file") or OSM_DEFAULT_QOS_POLICY_FILE)
        if "qos_policy_file" not in opts and not self.req.qos_policy and qos_read.parent != conf_path.parent:
            raise ExternalError(
                f"{conf_path}: qos_policy_file is unset, so OpenSM reads {qos_read}, outside this "
                f"conf's directory: add 'qos_policy_file {qos_read}' to it (the path OpenSM reads "
                "now, no restart needed), or --qos-policy, then apply"
            )
        given = self.req.qos_policy
        if given is not None and os.path.abspath(given) != os.path.abspath(qos_read):
            # OpenSM reads qos_policy_file's path only at start: a policy written elsewhere
            # (and the conf's line naming it) is never read by the OpenSM the apply verifies
            raise InputError(
                f"OpenSM reads its QoS policy from {qos_read}, and that path only at start: a policy "
                f"written to {given} would not be in force; leave --qos-policy out (the policy goes "
                f"to {qos_read}), or set 'qos_policy_file {given}' in {conf_path} and restart OpenSM "
                "once, then apply",
                field="--qos-policy",
            )
        paths = {
            "opensm.conf": conf_path,
            "qos-policy.conf": given or qos_read,
            "plugin-tables.conf": Path(opts["event_plugin_options"]),
        }
        if osmconf.is_set(opts, "partition_config_file"):
            paths["partitions.conf"] = Path(opts["partition_config_file"])
        return paths

    def _stored_set(self, conf_path: Path, opts: dict[str, str]) -> None:
        """ibqos rollback: the files of a stored version (and its plan, to verify against)."""

        cs = ConfigSet.beside(conf_path, {})
        v = self.req.rollback_to
        if v not in cs.versions():
            raise InputError(f"no version {v} in {cs.state} ('ibqos history' lists them)", field="VERSION")
        line = cs.tamper_line(v)
        if line:
            raise VerificationFailed(f"{line}; not rolling back to it")
        paths = self._managed_paths(conf_path, opts)
        for role in cs.roles(v):
            if role not in paths:
                raise ExternalError(f"{cs.state / v} holds {role}, but {conf_path} names no path for it")
            self.s.files[role] = osmconf.read(cs.state / v / role)
            self.s.paths[role] = paths[role]
        plan_file = cs.state / v / "plan.json"
        if plan_file.exists():
            self.s.plan_text = plan_file.read_text()
            self.s.plan = load_plan(plan_file)

    def _finish_render(self, conf_path: Path, opts: dict[str, str]) -> None:
        """What the new set drops is emptied, never left to dangle; then the P_Key guard."""
        cs = ConfigSet.beside(conf_path, {})
        paths = self._managed_paths(conf_path, opts)
        for role in cs.roles(cs.current_version()):
            if role in self.s.files:
                continue
            if role not in paths:
                raise ExternalError(f"{cs.current / role} is managed, but {conf_path} names no path for it any more")
            self.s.files[role], self.s.paths[role] = "", paths[role]
            self.s.removed.add(role)
        self._check_pkeys()
        if not self.req.standby:  # a standby's apply reads no sweep
            self._check_log_flags(conf_path)
        # the unit's --log_file beats the file's log_file, as on OpenSM's command line; the
        # file's is the running OpenSM's (opened at its start, relative from its working directory)
        self.s.log = self.s.log_override or Path(opts.get("log_file") or DEFAULT_LOG)
        if not self.req.standby:
            self._check_log_file(conf_path)
        self.s.dumps = record_dir(opts, self.s.pid)
        self.s.confset = ConfigSet.beside(conf_path, self.s.paths)
        foreign = self.s.confset.foreign_link_line()
        if foreign:
            raise ExternalError(foreign)

    def _check_log_flags(self, conf_path: Path) -> None:
        """The sweep's ERR lines roll an apply back, and OpenSM logs them only while log_flags
        (the new file's, which the SIGHUP re-reads) has the ERROR bit: osm_log drops a line
        whose level is off. Without it a policy OpenSM rejects would be verified (the read-back
        holds the tables, not the QoS policy or the partitions)."""
        text = self.s.files["opensm.conf"]
        value = osmconf.parse(text).get("log_flags", "")
        flags = osmconf.strtoul(value)
        if flags is None or flags & osmconf.LOG_ERROR:
            return
        raise InputError(
            f"{value} has OpenSM log no errors (its ERROR bit, 0x01, is off): apply could not see "
            "OpenSM reject the QoS policy or partitions in the sweep, and would verify them anyway; "
            "set log_flags 0x03 (OpenSM's default) or another value with 0x01",
            file=conf_path,
            line=osmconf.line_of(osmconf.read(conf_path), "log_flags"),
            field="log_flags",
        )

    def _check_log_file(self, conf_path: Path) -> None:
        """The sweep's ERR lines are read from the file OpenSM logs to. OpenSM's own names for
        its stdout (`-`, `stdout`, `stderr`: the journal, under systemd), a log that is no regular
        file (/dev/null), or one removed while OpenSM runs (it writes the removed file until a
        SIGUSR1 or its next start) leave them unseen, and a policy OpenSM rejected verified."""
        osm = OsmProcess.of(self.s.pid) if self.s.pid else None
        if osm is None:
            return  # a dry run with no OpenSM named: none logs yet
        given = opensm_options(list(osm.argv[1:])).get("log_file")
        raw = given or osmconf.parse(self.s.files["opensm.conf"]).get("log_file") or str(DEFAULT_LOG)
        if raw in ("-", "stdout", "stderr"):
            why = (
                f"{raw}: OpenSM logs to its {'stderr' if raw == 'stderr' else 'stdout'} (under systemd, the "
                "journal), where apply cannot read the sweep's ERR lines, so it would verify a policy "
                "OpenSM rejected; give OpenSM a log file (-f FILE, or log_file FILE and a restart)"
            )
            if given:
                raise InputError(why, field=f"OpenSM (pid {osm.pid}) -f/--log_file")
            line = osmconf.line_of(osmconf.read(conf_path), "log_file")
            raise InputError(why, file=conf_path, line=line, field="log_file")
        log = self.s.log
        if log.is_file():
            return
        why = (
            "is not a regular file"
            if log.exists()
            else f"does not exist (removed while OpenSM runs? it writes the removed file until 'kill -USR1 {osm.pid}', "
            "what logrotate sends, or its next start)"
        )
        raise ExternalError(
            f"OpenSM (pid {osm.pid}) logs to {log}, which {why}: apply cannot read the sweep's ERR lines there, "
            "so it would verify a policy OpenSM rejected"
        )

    def _check_pkeys(self) -> None:
        """Partitions the fabric carries (the partitions file OpenSM reads now) that the new set
        drops take their P_Keys off every port: only with --allow-pkey-removal."""

        path = self.s.paths.get("partitions.conf")
        if path is None:
            return
        old = pkeys_in(osmconf.read(path) if path.exists() else "")
        gone = set(old) - set(pkeys_in(self.s.files["partitions.conf"])) - {DEFAULT_PKEY}
        self.s.pkeys_gone = sorted(gone)
        if not gone:
            return
        names = ", ".join(old[k] for k in self.s.pkeys_gone)
        if not (self.req.allow_pkey_removal or self.req.dry_run):
            raise InputError(
                f"P_Keys {names} would go from every port ({path} loses them): "
                "give --allow-pkey-removal to remove them",
                field="--allow-pkey-removal",
            )
        tail = "" if self.req.allow_pkey_removal else " (apply refuses this without --allow-pkey-removal)"
        self.echo(f"P_Keys removed from every port: {names}{tail}")

    def stage_validate(self) -> None:
        with tempfile.TemporaryDirectory(prefix="ibqos-validate-") as tmp:
            conf = Path(tmp) / "opensm.conf"
            conf.write_bytes(osmconf.to_bytes(self.s.files["opensm.conf"]))
            tables = Path(tmp) / "plugin-tables.conf"
            tables.write_text(self.s.files["plugin-tables.conf"])
            validate_opensm_conf(conf, shown=self.s.paths["opensm.conf"])
            validate_plugin_tables(tables)

    def show_diff(self) -> None:
        """Every managed file: added, changed, removed (emptied) or unchanged, with its diff."""
        line = self.confset.damage_line()
        if line:
            self.echo(f"note: {line} (apply refuses to build on it without --accept-edits)")
        changed = False
        for role, path in self.s.paths.items():
            old = osmconf.read(path) if path.exists() else None
            new = self.s.files[role]
            if role in self.s.removed:
                kind = "removed"
            elif old is None:
                kind = "added"
            else:
                kind = "changed" if old != new else ""
            if not kind:
                self.echo(f"{path}: unchanged")
                continue
            changed = True
            self._echo_diff(path, old or "", new, kind)
        if not changed:
            self.echo("no change: the files already hold this plan")

    def _echo_diff(self, path: Path, old: str, new: str, kind: str) -> None:
        note = " (emptied, not deleted: its link never dangles)" if kind == "removed" else ""
        self.echo(f"{kind}: {path}{note}")
        diff = difflib.unified_diff(
            old.splitlines(True),
            new.splitlines(True),
            fromfile="/dev/null" if kind == "added" else str(path),
            tofile=f"{path} (new)",
        )
        self.echo(osmconf.printable("".join(diff).rstrip("\n")))

    def stage_snapshot(self) -> None:
        require_master(self.s.pid, self.port, self.req.env)
        require_record(self.s.pid, self.s.dumps, timeout=self.req.sweep_timeout, unit=self._unit())
        self.s.before = read_live(self.req.env, at=self.port)
        self._check_data_vls(self.s.before)
        self.s.journal = Journal(self.confset.state)

    def _check_data_vls(self, fabric: Fabric) -> None:
        """A plan for more data VLs than a port's VLCap is refused before anything is written,
        as the dry run refuses it (conformance.data_vls_shortfall): OpenSM would take the
        files and the plugin refuse its tables (ERR D1A3), costing a sweep and a rollback."""
        if self.s.plan is None:  # the admin's own files: no plan to hold the fabric to
            return
        short = data_vls_shortfall(fabric, self.s.plan.fabric.data_vls)
        if short:
            plan_file = self.req.plan_path
            if self.req.rollback_to:
                plan_file = state_dir_for(self.req.opensm_conf) / self.req.rollback_to / "plan.json"
            raise VerificationFailed(f"{plan_file}: fabric.data_vls: {short}; nothing changed")

    def stage_adopt(self) -> None:
        with deferred():  # this step and the next three are quick and local: done whole or not begun
            self.confset.adopt()

    def stage_stage(self) -> None:  # the step "stage": the new version's files, beside the current ones
        with deferred():
            self._stage()

    def _stage(self) -> None:
        cs = self.confset
        cs.cleanup_staging()
        self.s.previous = cs.current_version()
        sha = self.s.plan_sha256 or None
        if self.req.rollback_to:
            # the roles it lacks stay missing; `absent` only when one does, as other metas were
            gone = sorted(cs.absent(self.req.rollback_to)) or None
            meta = VersionMeta(rollback_of=self.req.rollback_to, plan_sha256=sha, absent=gone)
        else:
            plan = produced(self.s.plan, "the plan (stage render)")
            meta = VersionMeta(
                plan=str(self.req.plan_path.resolve()), policy_sha256=plan.policy_sha256, plan_sha256=sha
            )
        extra = {"plan.json": self.s.plan_text} if self.s.plan_text else None
        self.s.version = cs.stage(self.s.files, meta, extra=extra)
        if self.s.journal is None:  # --standby: no read-back before
            self.s.journal = Journal(cs.state)
        else:
            self.s.journal.save_before(produced(self.s.before, "the fabric before (stage snapshot)"))
        self.s.entry = Entry(
            "intent",
            self.s.previous,
            self.s.version,
            self.s.pid,
            str(self.s.log),
            action="rollback" if self.req.rollback_to else "apply",
            plan_sha256=sha,
            who=who(),
            dumps=str(self.s.dumps),
        )
        self._journal("intent")

    def stage_flip(self) -> None:
        with deferred():
            self.confset.flip(produced(self.s.version, "the new version (stage stage)"))
            self._journal("swapped")
            if self.req.standby:
                self._journal("standby")  # done: its SM reads the files when it becomes master
        self.echo(f"configuration {self.s.previous} → {self.s.version}")

    def stage_sweep(self) -> None:
        with held_mark(self.s.log) as mark:  # a log rotated meanwhile is read to its end
            self.s.swept_at = time.time()
            t = self._access().sweep(self.s.pid, self.s.dumps)
            self._journal("swept")
            errs, truncated = sweep_failures(mark)
            errs, known = split_known_failures(mark, errs)
            self.s.engine = engine_since(mark)
        if errs:
            # Exit 1 like tables the plugin refuses: the running SM rejected the configuration.
            raise VerificationFailed(
                f"OpenSM logged {len(errs)} error(s) in the sweep ({self.s.log}), first: {errs[0]}"
                + (f" ({len(known)} more it logged before this apply too)" if known else "")
            )
        if known:
            self.echo(
                f"note: OpenSM logged {len(known)} error(s) in the sweep that it logged before this apply too, "
                f"with the previous configuration, so not this one's (first: {known[0]})"
            )
        cut = f" ({self.s.log} was truncated by log_max_size meanwhile: errors logged before that are not seen)"
        self.echo(f"OpenSM heavy sweep done in {t:.1f} s" + (cut if truncated else ""))

    def stage_readback(self) -> None:
        self.s.after = read_live(self.req.env, at=self.port)

    def stage_verify(self) -> None:
        self._check_plan()
        if self.s.plan is not None:
            self.confset.save_verified_fabric(
                produced(self.s.version, "the new version (stage stage)"),
                produced(self.s.after, "the fabric read back (stage readback)"),
            )
        self._journal("verified")

    def _check_plan(self) -> None:
        if self.s.plan is None:  # a rollback to the admin's original files: no plan to hold them to
            self.echo(f"{self.req.rollback_to} has no plan (the admin's own files): swept without OpenSM errors")
            return
        after = produced(self.s.after, "the fabric read back (stage readback)")
        expected = expected_from_plan(self.s.plan)
        groups = None
        if expected.dragonfly:  # the groups dla routed this sweep with (docs/groups.md)
            groups = groups_in_force(after, record_in(self.s.dumps, since=self.s.swept_at))
            if groups.disagreement:
                self.echo(f"groups: {groups.disagreement}")
        diffs = diff_programmed(after, expected, groups)
        if diffs:
            raise VerificationFailed(
                f"programmed tables differ from the plan on {len(diffs)} port(s), first: {diffs[0]}"
            )
        low = mtu_findings(after, self.s.plan.fabric.mtu)
        if low:
            raise VerificationFailed(f"{len(low)} port(s) run below the plan's MTU, first: {low[0]}")
        self.echo("read back: every port equals the plan")
        self.echo(f"read back: every link runs at least the plan's MTU {self.s.plan.fabric.mtu}")
        self._check_routing(after)

    def _check_routing(self, after: Fabric) -> None:
        """What `status --live` holds the routing to (health.routing_findings): reachability,
        LID loops, credit loops on the SLs in use, the SA's path SLs for an engine that layers
        by SL. Equal tables say nothing of the LFTs, nor of an SL2VL that folds layers."""
        plan = produced(self.s.plan, "the plan (stage render)")
        engine = self.s.engine or plan.fabric.routing  # unlogged: the sweep had no ERR, so the plan's
        routing = Routing(engine)
        if needs_path_sls(engine):
            try:
                routing.path_sls = query_path_sls(after, self.req.env, at=self.port)
            except ExternalError as e:
                routing.path_sls_note = f"no path SLs from the SA: {e}"
        judged = Judged()
        routing_findings(after, plan, routing, judged)
        if judged.findings:
            first, more = judged.findings[0], len(judged.findings) - 1
            also = f" (and {more} more: {', '.join(f.kind for f in judged.findings[1:])})" if more else ""
            raise VerificationFailed(f"read back: {first.message}{also}")
        for line in judged.said:
            self.echo(f"read back: {line}")

    def stage_prune(self) -> None:
        cs = self.confset
        with deferred():
            kept = {cs.current_version(), self.s.previous}
            self.s.pruned = cs.prune(self.req.keep, protect={v for v in kept if v is not None})

    @staticmethod
    def say_not_begun(e: KeyboardInterrupt, echo: Callable[[str], None]) -> None:
        sig = f" by {e.name}" if isinstance(e, Interrupted) else ""
        echo(f"interrupted{sig} before the swap: nothing changed")

    def interrupted(self, e: KeyboardInterrupt) -> None:
        """A signal stopped the apply: leave one whole state and say which, in one line.
        Before the flip nothing went live and the staged version goes; after it the previous
        version is restored and proved (signals held meanwhile); after verification the new
        version stays. The journal covers this process being killed during it."""
        sig = f" by {e.name}" if isinstance(e, Interrupted) else ""
        self.s.interrupt_said = True
        entry, cs = self.s.entry, self.s.confset
        with deferred():
            if entry is not None and entry.state == "rolled-back":
                self.echo(f"interrupted{sig} after the rollback to {self.s.previous}: it stays")
                return
            if entry is None or cs is None or cs.current_version() != self.s.version:
                self._drop_unswapped()
                self.say_not_begun(e, self.echo)
                return
            if entry.state == "verified":
                self.echo(f"interrupted{sig} after {self.s.version} was verified: it stays")
                return
            access = self._access()
            try:
                proved = restore(cs, self.journal, entry, access, hook=self.hook)
            except IbqosError as err:
                self.echo(
                    f"interrupted{sig} after the swap; rolling back to {self.s.previous} failed: {err} "
                    f"('ibqos status --opensm-conf {self.req.opensm_conf}' finishes it)"
                )
                return
            self.echo(f"interrupted{sig} after the swap: rolled back to {self.s.previous}, {proved}")

    def _drop_unswapped(self) -> None:
        """Before the flip: the staged version (if any) goes, and the journal says so. A version
        written whole before the journal said 'intent' (saving the fabric read before it failed)
        goes too: no journal line names it, so no recovery would (before, it stayed)."""
        entry, cs = self.s.entry, self.s.confset
        if cs is None:
            return
        staged = entry.version if entry is not None else self.s.version
        if staged is not None and cs.current_version() != staged:
            cs.discard(staged)
        if entry is not None:
            self.journal.write(entry, "discarded")
        cs.cleanup_staging()

    def rollback(self, cause: IbqosError) -> NoReturn:
        self.echo(f"apply failed: {cause}; rolling back to {self.s.previous}")
        self.s.outcome = f"rolled back {self.s.version} to {self.s.previous}: {cause}"
        access = self._access()
        try:
            with deferred():  # a signal now waits for the rollback to finish
                entry = produced(self.s.entry, "the journal entry (stage stage)")
                proved = restore(self.confset, self.journal, entry, access, hook=self.hook)
        except NotMaster as e:
            # the files are back on `previous` (restore flips before it sweeps), which the
            # standby reads when it is master again; the journal stays at "rollback" until then
            raise NotMaster(
                f"{e}: it handed the subnet over while {self.s.version} was being swept; its files are "
                f"back on {self.s.previous}, not swept (a standby sweeps nothing): 'ibqos status "
                f"--opensm-conf {self.req.opensm_conf}' sweeps and proves them once it is master again; "
                "apply on the master's host"
            ) from cause
        except ExternalError as e:
            raise ExternalError(f"{cause}; {e}") from e
        raise type(cause)(f"{cause}; rolled back to {self.s.previous}, {proved}") from cause
