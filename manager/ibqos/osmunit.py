"""Which systemd unit runs an OpenSM, and the line that says how to restart it.

Below apply and health alike: `apply` names the unit in its refusals and `--init-conf`'s
restart line, `status` and `monitor` in finding `plugin-version` (health.plugin_finding).
A host with one OpenSM per port (Debian's `opensm@GUID.service`) is why a bare
`systemctl restart opensm` is never the answer: Debian's units are `PartOf=opensm.service`, so
it restarts every port's OpenSM, each subnet's master at once; elsewhere it may name no unit.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

from .errors import ExternalError, ProcessError
from .proc import run_command


def systemd_running() -> bool:
    return Path("/run/systemd/system").is_dir() and shutil.which("systemctl") is not None


def systemctl(*args: str) -> str:
    try:
        return run_command(["systemctl", *args], timeout=60).stdout
    except ProcessError as e:
        raise ExternalError(f"systemctl {' '.join(args)} failed: {e.output or e}") from e


def unit_of(pid: int) -> str | None:
    """The systemd service OpenSM `pid` is the main process of, from its cgroup
    (`/proc/PID/cgroup`: the unified hierarchy's `0::`, else cgroup v1's `name=systemd`), where
    systemd places every process of a unit, the init script's under systemd-sysv-generator
    included (`/system.slice/system-opensm.slice/opensm@0x….service`). With systemd running, the
    unit's MainPID must be `pid`: an OpenSM started from a shell inside another service (a CI
    runner, a tmux a service started) is in that service's cgroup. None when it runs in none."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    paths = dict(line.split(":", 2)[1:] for line in lines if line.count(":") >= 2)
    leaf = (paths.get("") or paths.get("name=systemd") or "").rstrip("/").rpartition("/")[2]
    if not leaf.endswith(".service"):
        return None
    if systemd_running():
        try:
            main = systemctl("show", "-p", "MainPID", "--value", leaf).strip()
        except ExternalError:
            return None
        if main != str(pid):
            return None
    return leaf


def restart_hint(pid: int, unit: str | None = None) -> str:
    """What an admin runs to restart OpenSM `pid`: its unit's restart (`unit`, --service's,
    else the one it runs in, unit_of), else its own command line again: a bare
    `systemctl restart opensm` restarts every port's OpenSM on Debian (PartOf), or none."""
    unit = unit or unit_of(pid)
    if unit:
        return f"'systemctl restart {unit}'"
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        cmd = shlex.join(a.decode(errors="replace") for a in argv)
    except OSError:
        cmd = "its command line"
    return f"stop pid {pid} (it runs in no systemd unit) and start it again: {cmd}"
