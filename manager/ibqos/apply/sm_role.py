"""Which SM is master, as the fabric says, and whether the OpenSM apply signals is it.

A standby OpenSM (a higher-priority SM took over, or it started second) sweeps nothing: a
SIGHUP only wakes its polling of the master, so no heavy sweep ever ends, and the plugin
record it wrote while it was master stays (often at `sweeping`, the sweep the handover cut
short). OpenSM 3.3.23 tells its plugins nothing of the handover, so the fabric is asked, as
an admin would ask it: `sminfo` reads the SMInfo of the SM at the local port's MasterSMLID
(its GUID, LID, priority and state). This OpenSM's port is its command line's `-g/--guid`,
else opensm.conf's `guid`, else the first port `ibstat -p` lists (where OpenSM binds when
told none).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import ExternalError
from ..paths import require_tool
from ..proc import run_command
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


def master_sm(env: dict[str, str] | None) -> MasterSm | None:
    """The master SM as `sminfo` reports it, or None when no SM answers (none is master yet)."""
    cp = run_command([require_tool("sminfo", "infiniband-diags")], env=env, timeout=30, check=False)
    m = _SMINFO.search(cp.stdout)
    if cp.returncode != 0 or m is None:
        return None
    return MasterSm(int(m[1]), int(m[2], 16), int(m[3]), m[4])


def opensm_port(pid: int, conf_opts: dict[str, str], env: dict[str, str] | None) -> int | None:
    """The port GUID OpenSM `pid` runs on (see the module's docstring), None if unknown."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").decode(errors="replace").split("\0")
    except OSError:
        argv = []
    for given in (opensm_options(argv[1:]).get("guid"), conf_opts.get("guid")):
        try:
            guid = int(given or "0", 16)
        except ValueError:
            continue
        if guid:
            return guid
    cp = run_command([require_tool("ibstat", "infiniband-diags"), "-p"], env=env, timeout=30, check=False)
    first = cp.stdout.split()[:1] if cp.returncode == 0 else []
    return int(first[0], 16) if first and re.fullmatch(r"0x[0-9a-fA-F]+", first[0]) else None


def role_line(pid: int, conf_opts: dict[str, str], env: dict[str, str] | None) -> tuple[bool, str]:
    """(whether OpenSM `pid` is the master, one line saying which SM is). Unknown counts as
    master: the plugin record's wait then judges, as before."""
    master = master_sm(env)
    if master is None:
        return True, "master SM: none answers sminfo"
    port = opensm_port(pid, conf_opts, env)
    if port is None or port == master.guid:
        return True, f"master SM: {master}, this OpenSM (pid {pid})"
    return False, f"master SM: {master}; this OpenSM (pid {pid}, port 0x{port:016x}) is not it (standby)"


def require_master(pid: int, conf_opts: dict[str, str], env: dict[str, str] | None) -> None:
    """Refuse, before anything changes, to signal an OpenSM that is not the master."""
    master, line = role_line(pid, conf_opts, env)
    if not master:
        raise ExternalError(
            f"{line}: a standby sweeps nothing, so no SIGHUP would take effect; apply on the "
            "master's host, or 'ibqos apply PLAN --standby' here to stage the version for when it takes over"
        )
