"""The libibqos.so a running OpenSM has mapped: the plugin it runs, whatever its record says.

OpenSM loads its event plugins once, at its start (`load_plugins`: `dlopen("lib<name>.so")`),
master or standby, and keeps them until it exits. A package upgrade renames the new file over
the old one (dpkg), so the process maps a file no longer installed: `(deleted)` in
`/proc/PID/maps`, or an inode that is no longer the one at that path. The record's
`plugin_version` cannot tell when the release stays the same (a Debian revision that patches
the plugin), and an OpenSM that has not loaded the plugin writes no record at all.
"""

from __future__ import annotations

import os
from pathlib import Path

PLUGIN_FILE = "libibqos.so"  # what OpenSM dlopens for `event_plugin_name ibqos`
DELETED = " (deleted)"


def _mapped(pid: int) -> tuple[str, bool] | bool | None:
    """(path, still the installed file) of the plugin OpenSM `pid` mapped; False when it mapped
    none; None when its map cannot be read (another user's process: not judged)."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return None
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) < 6:
            continue
        path = fields[5].removesuffix(DELETED)
        if Path(path).name != PLUGIN_FILE:
            continue
        major, _, minor = fields[3].partition(":")
        try:
            # in its own mount namespace (/proc/PID/root): an OpenSM in a container maps its own /usr/lib
            st = os.stat(Path(f"/proc/{pid}/root") / path.lstrip("/"))
            same = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino) == (
                int(major, 16),
                int(minor, 16),
                int(fields[4]),
            )
        except (OSError, ValueError):
            same = False
        return path, same and not fields[5].endswith(DELETED)
    return False


def replaced_line(pid: int, restart: str) -> str | None:
    """Why OpenSM `pid` runs a plugin file that is no longer the installed one, with `restart`
    (osmunit.restart_hint); None when it runs the installed file, none, or cannot be read."""
    found = _mapped(pid)
    if not isinstance(found, tuple) or found[1]:
        return None
    return (
        f"the running OpenSM (pid {pid}) runs the ibqos plugin it loaded at its start from {found[0]}, "
        f"which has been replaced since (an upgrade): restart it to load the installed plugin: {restart}"
    )


def not_loaded_line(pid: int, restart: str) -> str | None:
    """Why OpenSM `pid` runs without the plugin (its map holds no libibqos.so); None when it
    loaded one or its map cannot be read."""
    if _mapped(pid) is not False:
        return None
    return (
        f"the running OpenSM (pid {pid}) has not loaded the ibqos plugin (started before event_plugin_name "
        f"named it, or libibqos.so was not found: its log says), so as master it would route without it: "
        f"restart it once: {restart}"
    )
