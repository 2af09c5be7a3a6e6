"""Where ibqos finds its own templates and build products, and the Debian pieces it runs."""

from __future__ import annotations

import functools
import json
import os
import shutil
from pathlib import Path

from .errors import ExternalError, ProcessError
from .proc import run_command

REPO_ROOT = Path(__file__).resolve().parents[2]
# Written by `make install` next to this file: where the installed build products are. Its
# absence means a source checkout, whose products are in build/.
LAYOUT_FILE = Path(__file__).resolve().parent / "_layout.json"

# Build product (relative to build/) -> (installed directory key, installed file name).
INSTALLED = {
    "plugin/libibqos.so": ("libdir", "libibqos.so"),
    "plugin/ibqos-tablecheck": ("bindir", "ibqos-tablecheck"),
    "manager/readback/ibqos-readback": ("bindir", "ibqos-readback"),
    "ci-sim/core/libibqos_sim.so": ("pkglibdir", "libibqos_sim.so"),
}


@functools.cache
def installed_layout() -> dict[str, str] | None:
    try:
        layout: dict[str, str] = json.loads(LAYOUT_FILE.read_text())
        return layout
    except FileNotFoundError:
        return None


# Where a wheel (pip install) puts the templates: inside this package (CMakeLists.txt, SKBUILD).
PACKAGED_TEMPLATES = Path(__file__).resolve().parent / "templates"


def templates_dir() -> Path:
    if "IBQOS_TEMPLATES" in os.environ:
        return Path(os.environ["IBQOS_TEMPLATES"])
    layout = installed_layout()
    if layout:
        return Path(layout["templates"])
    return PACKAGED_TEMPLATES if PACKAGED_TEMPLATES.is_dir() else REPO_ROOT / "templates"


def in_checkout() -> bool:
    """Whether this package runs from a source checkout (the editable install of `make deps`)."""
    return (REPO_ROOT / "CMakeLists.txt").is_file() and (REPO_ROOT / "manager" / "ibqos").is_dir()


def build_dir() -> Path:
    return Path(os.environ.get("IBQOS_BUILD_DIR", REPO_ROOT / "build"))


def product(relpath: str) -> Path:
    """Where a build product is: build/ in a checkout (or IBQOS_BUILD_DIR), else the installed
    location."""
    layout = installed_layout()
    if layout and "IBQOS_BUILD_DIR" not in os.environ and relpath in INSTALLED:
        key, name = INSTALLED[relpath]
        return Path(layout[key]) / name
    if not layout and "IBQOS_BUILD_DIR" not in os.environ and not in_checkout() and relpath in INSTALLED:
        # A wheel (pip install): the C tools come from the SM host's `make install`, on PATH.
        key, name = INSTALLED[relpath]
        found = shutil.which(name) if key == "bindir" else None
        if found:
            return Path(found)
    return build_dir() / relpath


def plugin_dir() -> Path:
    """Directory holding libibqos.so (OpenSM loads `lib<event_plugin_name>.so` from the library
    path); IBQOS_PLUGIN_DIR names another one, e.g. a staged `make install`."""
    if "IBQOS_PLUGIN_DIR" in os.environ:
        return Path(os.environ["IBQOS_PLUGIN_DIR"])
    return product("plugin/libibqos.so").parent


def built(relpath: str) -> Path:
    """A build product, or a clear error naming the make target that produces it."""
    p = product(relpath)
    if not p.exists():
        if in_checkout() or installed_layout():
            raise ExternalError(f"{p} is missing: run 'make build' first")
        raise ExternalError(f"{p.name} is not installed: 'make install' it from an ibqos checkout (README)")
    return p


@functools.cache
def umad2sim_lib() -> Path:
    """libumad2sim.so, located through dpkg as its path differs between architectures."""
    try:
        out = run_command(["dpkg", "-L", "libumad2sim0"]).stdout
    except ProcessError as exc:
        raise ExternalError("Debian package libumad2sim0 is not installed (run 'make deps')") from exc
    for line in out.splitlines():
        if line.endswith("/libumad2sim.so"):
            return Path(line)
    raise ExternalError("libumad2sim0 is installed but ships no libumad2sim.so")


def require_tool(name: str, package: str) -> str:
    """Absolute path of an executable, or one error line naming the Debian package."""
    for d in os.environ.get("PATH", "").split(os.pathsep) + ["/usr/sbin", "/sbin"]:
        cand = Path(d) / name
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    raise ExternalError(f"'{name}' not found: install Debian package {package} (make deps)")
