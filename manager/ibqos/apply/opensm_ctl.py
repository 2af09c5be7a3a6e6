"""Making a running OpenSM 3.3.23 take new configuration.

What 3.3.23 honours (read from its source, opensm/main.c, osm_state_mgr.c, osm_subnet.c):
- SIGHUP sets `force_heavy_sweep` and sweeps; every heavy sweep first re-reads opensm.conf
  (`osm_subn_rescan_conf_files`), but only options marked updatable: all `qos_*` options are,
  `routing_engine`, `event_plugin_name`, `event_plugin_options` and `qos_policy_file` (the
  path) are not: changing those needs an OpenSM restart.
- The QoS policy file's *contents* are parsed again at every QoS setup, and the `dla` plugin
  reads its table file again at every heavy sweep, so new contents at unchanged paths take
  effect on SIGHUP.
- The console's `resweep heavy` does the same as SIGHUP; ibqos uses the signal, which needs no
  console configured.

That the sweep ended is read from the ibqos plugin's record (`ibqos-dla.json` in OpenSM's
dump_files_dir), which the plugin rewrites at OpenSM's HEAVY_SWEEP_START and SUBNET_UP events
with the process's PID and sweep counters; never from the log, which `log_max_size` truncates
and log_flags may silence. No MAD says it either: SMInfo stays MASTER throughout a sweep.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import ExternalError, InputError, ProcessError
from ..fabric.dla_record import RECORD_FILE, own_record, read_record
from ..health import plugin_finding
from ..inputfile import read_text
from ..proc import wait_until

RESTART_ONLY = (
    "routing_engine",
    "event_plugin_name",
    "event_plugin_options",
    "qos_policy_file",
    "partition_config_file",
)


def resolve_pid(pid: int | None, pidfile: Path | None) -> int:
    if pid is None:
        if pidfile is None:
            raise InputError("give --pid or --pidfile of the running OpenSM", field="apply")
        # read as every input is: a FIFO is refused, never waited on
        text = read_text(pidfile, limit=4096, what="a PID file")
        try:
            pid = int(text.split()[0])
        except (ValueError, IndexError) as exc:
            raise InputError("no PID in it", file=pidfile) from exc
        if pid <= 0:
            raise InputError(f"no PID in it ({pid})", file=pidfile)
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError as exc:
        raise ExternalError(f"no process {pid}: is OpenSM running?") from exc
    if comm != "opensm":
        raise ExternalError(f"process {pid} is {comm!r}, not opensm")
    return pid


def plugin_names(value: str) -> list[str]:
    """The plugins an `event_plugin_name` loads, split as OpenSM 3.3.23 does (load_plugins in
    osm_opensm.c): the first name ends at a comma or a blank, the others at a blank."""
    first, *rest = re.split(r"[, \t\n]", value.strip(), maxsplit=1) if value.strip() else [""]
    return [n for n in [first, *(rest[0].split() if rest else [])] if n and n != "(null)"]


def plugin_loaded(opts: dict[str, str]) -> bool:
    """Whether an opensm.conf loads the ibqos plugin, alone or beside others
    (`event_plugin_name ibqos osmeventplugin`)."""
    return "ibqos" in plugin_names(opts.get("event_plugin_name", ""))


def require_record(pid: int, dumps: Path, timeout: float = 120, unit: str | None = None) -> None:
    """Refuse, before anything changes, an OpenSM that writes no plugin record: every master's
    first heavy sweep writes one (waited for, up to `timeout`: an OpenSM just restarted).
    Without it a SIGHUP's sweep could never be seen to end, and apply, then its rollback,
    would each wait out the timeout. And one whose plugin is not this ibqos's release
    (require_plugin; `unit`: --service's)."""
    try:
        wait_until(lambda: own_record(dumps, pid) is not None, timeout=timeout, interval=0.1)
    except ProcessError:
        rec = read_record(dumps)
        theirs = (
            f"; the {RECORD_FILE} there is OpenSM pid {rec.osm_pid}'s: another OpenSM shares this "
            "dump_files_dir (give each its own)"
            if rec is not None and rec.osm_pid != pid
            else ""
        )
        raise ExternalError(
            f"OpenSM (pid {pid}) has written no ibqos plugin record in {dumps} since it started "
            f"(waited {timeout:g} s): it runs without the plugin (event_plugin_name was set after it "
            f"started: restart it once) or is a STANDBY SM (apply --standby on its host){theirs}"
        ) from None
    require_plugin(pid, dumps, unit)


def require_plugin(pid: int, dumps: Path, unit: str | None = None) -> None:
    """Refuse OpenSM `pid` when the record it wrote names another release's plugin (an upgrade
    it was not restarted after): status's finding `plugin-version` (health.plugin_finding), which
    says how to restart it. An OpenSM that wrote none since it started is not judged here
    (require_record waits for one)."""
    if found := plugin_finding(read_record(dumps), pid, unit):
        raise ExternalError(found.message)


def _no_watch() -> None:
    pass


def heavy_sweep(pid: int, dumps: Path, timeout: float = 120, watch: Callable[[], None] = _no_watch) -> float:
    """SIGHUP OpenSM and wait until a heavy sweep that started after the signal has ended
    (the plugin's record in `dumps`, see the module's docstring); returns seconds. `watch` is
    called throughout the waits and raises to end them (sm_role.master_watch: a handover).

    A heavy sweep already running may have read the configuration before the files changed,
    and a SIGHUP that lands in its discovery phase only restarts that phase (no new
    HEAVY_SWEEP_START): so it is waited for first, and the signal goes to an idle SM."""
    t0 = time.monotonic()
    deadline = t0 + timeout

    def alive() -> None:
        if not Path(f"/proc/{pid}").exists():
            raise ExternalError(f"OpenSM (pid {pid}) died during the heavy sweep")
        watch()

    def idle() -> bool:
        alive()
        rec = own_record(dumps, pid)
        return rec is None or rec.state == "up"

    what = f"OpenSM (pid {pid}) to end its sweep (ibqos plugin record in {dumps})"
    wait_until(idle, timeout=timeout, interval=0.1, what=what)
    before = own_record(dumps, pid)
    started = before.heavy_sweeps if before is not None else 0
    try:
        os.kill(pid, signal.SIGHUP)
    except ProcessLookupError as exc:
        raise ExternalError(f"OpenSM (pid {pid}) is gone") from exc

    def done() -> bool:
        alive()
        rec = own_record(dumps, pid)
        return rec is not None and rec.state == "up" and rec.heavy_sweeps > started

    wait_until(done, timeout=max(1.0, deadline - time.monotonic()), interval=0.1, what=what + " after SIGHUP")
    return time.monotonic() - t0
