"""The apply pipeline: recover → render → validate → snapshot → adopt → stage → flip → sweep
→ read back → verify → prune.

Each step is a small method `stage_<step>`; the one driver (ibqos.pipeline) runs them in
order and times them, and `run()` holds the configuration's lock from recovery to pruning.
A defect is an exception (VerificationFailed: exit 1, mapped in ibqos.cli). The journal
(`journal.py`) records each state before the step it names, so a crash anywhere is finished
or undone by the next apply or status (`recover.py`). A failure after the flip restores the
previous version, sweeps again and proves the fabric is back as it was. For the
fault-injection tests, IBQOS_APPLY_FAULT=<step> makes the process SIGKILL itself as that
step starts (the driver's `before` hook), and IBQOS_APPLY_FAULT=journal:<state> right after
the journal says <state>.
"""

from __future__ import annotations

import difflib
import os
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ExternalError, IbqosError, InputError, VerificationFailed
from .. import osmconf
from ..pipeline import Hooks, Pipeline
from ..osmlog import log_size, sweep_failures
from .confset import ConfigSet, state_dir_for
from .journal import Entry, Journal
from .lock import apply_lock
from .opensm_ctl import RESTART_ONLY, heavy_sweep, resolve_pid
from .recover import FabricAccess, recover, restore
from .validate import validate_opensm_conf, validate_plugin_tables

STEPS = ("recover", "render", "validate", "snapshot", "adopt", "stage", "flip", "sweep", "readback", "verify", "prune")
DEFAULT_KEEP = 10
DEFAULT_LOG = Path("/var/log/opensm.log")
ROLE_FILES = ("opensm.conf", "qos-policy.conf", "plugin-tables.conf")


def fault_hook(step: str) -> None:
    if os.environ.get("IBQOS_APPLY_FAULT") == step:
        os.kill(os.getpid(), signal.SIGKILL)


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


@dataclass
class ApplyState:
    plan: object = None
    files: dict[str, str] = field(default_factory=dict)
    paths: dict[str, Path] = field(default_factory=dict)
    confset: ConfigSet | None = None
    previous: str | None = None
    version: str | None = None
    before: object = None  # fabric read back before the flip
    after: object = None  # fabric read back after the sweep
    log: Path = DEFAULT_LOG
    pid: int = 0
    journal: Journal | None = None
    entry: Entry | None = None
    recovered: str | None = None  # what recovery found and did, if anything
    pruned: list[str] = field(default_factory=list)
    service: object = None  # apply.service.ServiceTarget, with --service
    log_override: Path | None = None  # the unit's --log_file
    swept_at: float | None = None  # time.time() as the sweep was asked for


class Apply:
    def __init__(self, req: ApplyRequest, echo=print, hook=fault_hook):
        self.req, self.echo, self.hook = req, echo, hook
        self.s = ApplyState()
        # the fault hook runs as each step starts (IBQOS_APPLY_FAULT=<step> kills us there)
        self.pipeline = Pipeline(STEPS, Hooks(before=hook))

    # ---- driver ----------------------------------------------------------
    def run(self) -> ApplyState:
        if self.req.service:
            if self._target_service():
                return self.s  # --init-conf: the whole file written, restart next
        if self.req.dry_run:
            self.pipeline.run(self, ("render", "validate"))
            self.show_diff()
            return self.s
        if not self.req.service:
            self.s.pid = resolve_pid(self.req.pid, self.req.pidfile)
        with apply_lock(state_dir_for(self.req.opensm_conf), timeout=self.req.lock_timeout, echo=self.echo):
            self.pipeline.run(self, STEPS[: STEPS.index("flip") + 1])
            try:
                self.pipeline.run(self, ("sweep", "readback", "verify"))
            except IbqosError as e:
                self.rollback(e)
            self.pipeline.run(self, ("prune",))
        return self.s

    def _journal(self, state: str) -> None:
        self.s.journal.write(self.s.entry, state)
        self.hook(f"journal:{state}")

    # ---- Debian's opensm@GUID.service ---------------------------------------------
    def _target_service(self) -> bool:
        """Point the request at what the unit runs. True when --init-conf wrote the missing
        opensm.conf (OpenSM reads it only at start: the caller stops there)."""
        from .service import is_whole_conf, resolve

        t = resolve(self.req.service)
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
                f"'{t.restart_hint()}'"
            )
        if self.req.init_conf:
            raise InputError("exists: --init-conf only creates a missing configuration", file=t.conf)
        text = t.conf.read_text()
        if not is_whole_conf(text):
            raise InputError(
                "holds only some of OpenSM's options (an ibqos fragment?), not a "
                "whole opensm.conf: merge it into 'opensm -c' output first",
                file=t.conf,
            )
        if t.pid is None:
            raise ExternalError(f"{t.unit} is not running (no process runs {' '.join(t.argv)})")
        self.s.pid = t.pid
        return False

    def _init_conf(self, t) -> None:
        """The unit's opensm.conf, whole: OpenSM's defaults (`opensm -c`) with the plan's options
        and its files beside it. Options OpenSM reads only at start take effect on restart."""
        from ..docfile import write_atomic
        from ..plan import Plan
        from ..render import render_plan
        from .service import opensm_defaults

        plan = Plan.load(self.req.plan_path)
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
        if fragment.get("event_plugin_name") == "ibqos":
            updates["event_plugin_options"] = str(side["plugin-tables.conf"])
        if "partitions.conf" in side:
            updates["partition_config_file"] = str(side["partitions.conf"])
        merged = osmconf.merge(opensm_defaults(), updates, f"ibqos apply {plan.policy_sha256[:12]}")
        conf_dir.mkdir(parents=True, exist_ok=True)
        for name, path in side.items():
            if path.exists():
                raise InputError(f"exists beside a missing {t.conf.name}: move it away first", file=path)
        for name, path in side.items():
            write_atomic(path, texts[name])
        write_atomic(t.conf, merged)
        self.echo(f"wrote {t.conf} (OpenSM's defaults with the plan) and " + ", ".join(str(p) for p in side.values()))
        self.echo(
            f"OpenSM reads them at start: '{t.restart_hint()}', then "
            f"'ibqos apply {self.req.plan_path} --service {self.req.service}' to verify"
        )

    # ---- steps -------------------------------------------------------------
    def stage_recover(self) -> None:
        cs = ConfigSet(self.s.paths, state_dir_for(self.req.opensm_conf))
        line = recover(cs, FabricAccess(self.s.pid, self.req.env, self.req.sweep_timeout))
        if line:
            self.s.recovered = line
            self.echo(f"recovered: {line}")

    def stage_render(self) -> None:
        from ..plan import Plan
        from ..render import render_plan

        self.s.plan = Plan.load(self.req.plan_path)
        conf_path = self.req.opensm_conf
        try:
            current = conf_path.read_text()
        except OSError as e:
            raise InputError(e.strerror or "cannot read", file=conf_path) from e
        opts = osmconf.parse(current)
        with tempfile.TemporaryDirectory(prefix="ibqos-apply-") as tmp:
            rendered = render_plan(self.s.plan, Path(tmp))
            fragment = osmconf.parse(Path(rendered["opensm.conf"]).read_text())
            policy = Path(rendered["qos-policy.conf"]).read_text()
            tables = Path(rendered["plugin-tables.conf"]).read_text()
            partitions = Path(rendered["partitions.conf"]).read_text() if "partitions.conf" in rendered else None
        if opts.get("event_plugin_name") != "ibqos" and fragment.get("event_plugin_name") == "ibqos":
            raise ExternalError(
                f"the running OpenSM does not load the ibqos plugin ({conf_path} has no "
                "'event_plugin_name ibqos'): add it and restart OpenSM once, then apply"
            )
        for key in ("routing_engine",):
            if key in fragment and opts.get(key, "") != fragment[key]:
                raise ExternalError(
                    f"{conf_path}: {key} is {opts.get(key, '(unset)')!r}, the plan needs "
                    f"{fragment[key]!r}; OpenSM reads it only at start: change it and restart"
                )
        # Paths OpenSM never re-reads stay as they are; their contents are what changes.
        qos_path = self.req.qos_policy or Path(opts.get("qos_policy_file") or conf_path.parent / "qos-policy.conf")
        tables_path = Path(opts.get("event_plugin_options") or conf_path.parent / "ibqos-tables.conf")
        updates = {k: v for k, v in fragment.items() if k not in RESTART_ONLY}
        updates["qos_policy_file"] = str(qos_path)
        if partitions is not None:
            # OpenSM reads partition_config_file's path only at start (its option table marks
            # it not updatable) but the file's contents at every heavy sweep: apply writes the
            # plan's partitions at the path the running SM already reads.
            if not opts.get("partition_config_file"):
                raise ExternalError(
                    f"{conf_path} sets no partition_config_file and the plan has "
                    "partitions: set it and restart OpenSM once, then apply"
                )
            part_path = Path(opts["partition_config_file"])
        # apply sees the heavy sweep end by its SUBNET UP line (level 0x02), so that line must
        # be logged and flushed; both options are re-read at the sweep SIGHUP starts.
        updates["force_log_flush"] = "TRUE"
        flags = int(opts.get("log_flags", "0x03"), 0)
        if not flags & 0x02:
            updates["log_flags"] = f"0x{flags | 0x02:02x}"
        self.s.files = {
            "opensm.conf": osmconf.merge(current, updates, f"ibqos apply {self.s.plan.policy_sha256[:12]}"),
            "qos-policy.conf": policy,
            "plugin-tables.conf": tables,
        }
        self.s.paths = {"opensm.conf": conf_path, "qos-policy.conf": qos_path, "plugin-tables.conf": tables_path}
        if partitions is not None:
            self.s.files["partitions.conf"] = partitions
            self.s.paths["partitions.conf"] = part_path
        # the unit's --log_file beats the file's log_file, as on OpenSM's command line
        self.s.log = self.s.log_override or Path(
            osmconf.parse(self.s.files["opensm.conf"]).get("log_file") or DEFAULT_LOG
        )
        self.s.confset = ConfigSet.beside(conf_path, self.s.paths)

    def stage_validate(self) -> None:
        with tempfile.TemporaryDirectory(prefix="ibqos-validate-") as tmp:
            conf = Path(tmp) / "opensm.conf"
            conf.write_text(self.s.files["opensm.conf"])
            tables = Path(tmp) / "plugin-tables.conf"
            tables.write_text(self.s.files["plugin-tables.conf"])
            validate_opensm_conf(conf)
            validate_plugin_tables(tables)

    def show_diff(self) -> None:
        for role in self.s.paths:
            path = self.s.paths[role]
            old = path.read_text() if path.exists() else ""
            diff = list(
                difflib.unified_diff(
                    old.splitlines(True),
                    self.s.files[role].splitlines(True),
                    fromfile=str(path),
                    tofile=f"{path} (plan)",
                )
            )
            self.echo("".join(diff) if diff else f"{path}: unchanged")

    def stage_snapshot(self) -> None:
        from ..fabric.live import read_live

        self.s.before = read_live(self.req.env)
        self.s.journal = Journal(self.s.confset.state)

    def stage_adopt(self) -> None:
        self.s.confset.adopt()

    def stage_stage(self) -> None:  # the step "stage": the new version's files, beside the current ones
        cs = self.s.confset
        cs.cleanup_staging()
        self.s.previous = cs.current_version()
        self.s.version = cs.stage(
            self.s.files,
            {"plan": str(self.req.plan_path.resolve()), "policy_sha256": self.s.plan.policy_sha256},
            extra={"plan.json": self.req.plan_path.read_text()},
        )
        self.s.journal.save_before(self.s.before)
        self.s.entry = Entry("intent", self.s.previous, self.s.version, self.s.pid, str(self.s.log))
        self._journal("intent")

    def stage_flip(self) -> None:
        self.s.confset.flip(self.s.version)
        self._journal("swapped")
        self.echo(f"configuration {self.s.previous} → {self.s.version}")

    def stage_sweep(self) -> None:
        offset = log_size(self.s.log)
        self.s.swept_at = time.time()
        t = heavy_sweep(self.s.pid, self.s.log, timeout=self.req.sweep_timeout)
        self._journal("swept")
        errs = sweep_failures(self.s.log, offset)
        if errs:
            # Exit 1 like tables the plugin refuses: the running SM rejected the configuration.
            raise VerificationFailed(
                f"OpenSM logged {len(errs)} error(s) in the sweep ({self.s.log}), first: {errs[0]}"
            )
        self.echo(f"OpenSM heavy sweep done in {t:.1f} s")

    def stage_readback(self) -> None:
        from ..fabric.live import read_live

        self.s.after = read_live(self.req.env)

    def stage_verify(self) -> None:
        from ..conformance import diff_programmed, expected_from_plan
        from ..fabric.groups_in_force import groups_in_force, record_of_conf

        expected = expected_from_plan(self.s.plan)
        groups = None
        if expected.dragonfly:  # the groups dla routed this sweep with (docs/groups.md)
            groups = groups_in_force(self.s.after, record_of_conf(self.req.opensm_conf, since=self.s.swept_at))
            if groups.disagreement:
                self.echo(f"groups: {groups.disagreement}")
        diffs = diff_programmed(self.s.after, expected, groups)
        if diffs:
            raise VerificationFailed(
                f"programmed tables differ from the plan on {len(diffs)} port(s), first: {diffs[0]}"
            )
        self._journal("verified")
        self.echo("read back: every port equals the plan")

    def stage_prune(self) -> None:
        cs = self.s.confset
        self.s.pruned = cs.prune(self.req.keep, protect={cs.current_version(), self.s.previous})

    def rollback(self, cause: IbqosError) -> None:
        self.echo(f"apply failed: {cause}; rolling back to {self.s.previous}")
        access = FabricAccess(self.s.pid, self.req.env, self.req.sweep_timeout)
        try:
            proved = restore(self.s.confset, self.s.journal, self.s.entry, access, self.s.log)
        except ExternalError as e:
            raise ExternalError(f"{cause}; {e}") from e
        raise type(cause)(f"{cause}; rolled back to {self.s.previous}, {proved}") from cause
