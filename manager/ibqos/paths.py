"""Where ibqos finds its own templates and build products, and the Debian pieces it runs."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

from .errors import ExternalError

REPO_ROOT = Path(__file__).resolve().parents[2]


def templates_dir() -> Path:
    return Path(os.environ.get("IBQOS_TEMPLATES", REPO_ROOT / "templates"))


def build_dir() -> Path:
    return Path(os.environ.get("IBQOS_BUILD_DIR", REPO_ROOT / "build"))


def plugin_dir() -> Path:
    """Directory holding libibqos.so (OpenSM loads `lib<event_plugin_name>.so` from the library path)."""
    return build_dir() / "plugin"


def built(relpath: str) -> Path:
    """A build product, or a clear error naming the make target that produces it."""
    p = build_dir() / relpath
    if not p.exists():
        raise ExternalError(f"{p} is missing: run 'make build' first")
    return p


@functools.cache
def umad2sim_lib() -> Path:
    """libumad2sim.so, located through dpkg as its path differs between architectures."""
    try:
        out = subprocess.run(["dpkg", "-L", "libumad2sim0"], capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        raise ExternalError("Debian package libumad2sim0 is not installed (run 'make deps')") from None
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
