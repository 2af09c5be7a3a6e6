"""The libibqos.so a running OpenSM has mapped: the plugin it runs, whatever its record says.

OpenSM loads its event plugins once, at its start (`load_plugins`: `dlopen("lib<name>.so")`),
master or standby, and keeps them until it exits. A package upgrade renames the new file over
the old one (dpkg), so the process maps a file no longer installed: `(deleted)` in
`/proc/PID/maps`. The record's
`plugin_version` cannot tell when the release stays the same (a Debian revision that patches
the plugin), and an OpenSM that has not loaded the plugin writes no record at all.
"""

from __future__ import annotations

from pathlib import Path

PLUGIN_FILE = "libibqos.so"  # what OpenSM dlopens for `event_plugin_name ibqos`
DELETED = " (deleted)"


def _is_plugin(path: str) -> bool:
    """The file OpenSM dlopened for `libibqos.so`: the map names the file the links lead to, as
    installed `libibqos.so -> libibqos.so.1 -> libibqos.so.1.0.0` (its SONAME and release)."""
    name = Path(path).name
    return name == PLUGIN_FILE or name.startswith(PLUGIN_FILE + ".")


def _mapped(pid: int) -> tuple[str, bool] | bool | None:
    """(path, still the installed file) of the plugin OpenSM `pid` mapped; False when it mapped
    none; None when its map cannot be read (another user's process: not judged).

    Replaced means unlinked: dpkg renames the new file over the old one, so the kernel shows the
    mapping `(deleted)`. No device and inode comparison with the path's file: on overlayfs (an
    OpenSM in a container) the map shows the backing file's device, never the overlay's, and
    every plugin would read as replaced."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return None
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and _is_plugin(path := fields[5].removesuffix(DELETED)):
            return path, not fields[5].endswith(DELETED)
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
