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
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from ..errors import ExternalError, InputError
from ..osmlog import count_subnet_up
from ..proc import wait_until

RESTART_ONLY = (
    "routing_engine",
    "event_plugin_name",
    "event_plugin_options",
    "qos_policy_file",
    "partition_config_file",
)


def resolve_pid(pid: int | None, pidfile: Path | None) -> int:
    if pid is None and pidfile is None:
        raise InputError("give --pid or --pidfile of the running OpenSM", field="apply")
    if pid is None:
        try:
            pid = int(pidfile.read_text().split()[0])
        except (OSError, ValueError, IndexError) as exc:
            raise InputError("no PID in it", file=pidfile) from exc
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError as exc:
        raise ExternalError(f"no process {pid}: is OpenSM running?") from exc
    if comm != "opensm":
        raise ExternalError(f"process {pid} is {comm!r}, not opensm")
    return pid


def heavy_sweep(pid: int, log: Path, timeout: float = 120) -> float:
    """SIGHUP OpenSM and wait for the SUBNET UP that ends the heavy sweep; returns seconds."""
    before = count_subnet_up(log)
    t0 = time.monotonic()
    try:
        os.kill(pid, signal.SIGHUP)
    except ProcessLookupError as exc:
        raise ExternalError(f"OpenSM (pid {pid}) is gone") from exc

    def up() -> bool:
        if not Path(f"/proc/{pid}").exists():
            raise ExternalError(f"OpenSM (pid {pid}) died during the heavy sweep; see {log}")
        return count_subnet_up(log) > before

    wait_until(up, timeout=timeout, interval=0.1, what=f"SUBNET UP in {log} after SIGHUP")
    return time.monotonic() - t0
