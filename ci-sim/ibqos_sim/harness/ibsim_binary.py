"""Which ibsim runs a fabric: Debian's (ibsim-utils 0.10, VLArb tables of 8 entries, no
VLHighLimit, links at MTU 2048) or the patched one `make build` leaves in build/ibsim-patched/
(ci-sim/ibsim-patch: 64-entry tables, VLHighLimit stored, MTUCap 4096 and the NeighborMTU the
SM sets; docs/ibsim.md).

A choice is "debian", "patched" or "auto" (patched when built, else Debian's). IBQOS_IBSIM
sets the default where the caller gives none.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path

from ibqos import paths
from ibqos.errors import ExternalError, InputError

CHOICES = ("auto", "patched", "debian")
PATCHED_DIR = "ibsim-patched"

# PortInfo VLArbitrationHighCap/LowCap of every port: Debian's from ibsim's sim_net.c port
# templates, the patched one's from the patch's VLARBCAP.
DEBIAN_VLARB_CAP = (8, 8)
PATCHED_VLARB_CAP = (64, 64)


@dataclass(frozen=True)
class IbsimBinary:
    kind: str  # "debian" or "patched"
    path: str
    vlarb_cap: tuple[int, int]
    stores_high_limit: bool
    built_from: str = ""  # the patched build's source and patch
    args: tuple[str, ...] = ()  # the options given beyond the harness's own (running())

    def describe(self) -> str:
        if self.kind == "debian":
            return (
                f"Debian ibsim ({self.path}): VLArb {self.vlarb_cap[0]}/{self.vlarb_cap[1]}, "
                "no VLHighLimit, links at MTU 2048"
            )
        return (
            f"patched ibsim ({self.path}, {self.built_from}): VLArb "
            f"{self.vlarb_cap[0]}/{self.vlarb_cap[1]}, VLHighLimit stored, MTUCap 4096"
        )

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "path": self.path,
            "vlarb_cap": list(self.vlarb_cap),
            "built_from": self.built_from,
            "args": list(self.args),
        }

    def running(self, args: tuple[str, ...]) -> IbsimBinary:
        """This binary as it runs with these extra options: the patched one's `-a N`
        (--VLArbcap) makes every port report N/N instead of 64/64."""
        cap = _vlarb_cap_option(args) if self.kind == "patched" else None
        return replace(self, args=tuple(args), vlarb_cap=(cap, cap) if cap else self.vlarb_cap)


def _vlarb_cap_option(args: tuple[str, ...]) -> int | None:
    """The last -a/--VLArbcap value of an ibsim command line (as its getopt_long takes it:
    `-a 8`, `-a8`, `--VLArbcap 8`, `--VLArbcap=8`; strtoul base 0), else None. A value ibsim
    refuses (not 1..64) stops it at start, so it is never what a fabric ran with."""
    cap = None
    it = iter(args)
    for a in it:
        if a in ("-a", "--VLArbcap"):
            value = next(it, "")
        elif a.startswith("--VLArbcap="):
            value = a.split("=", 1)[1]
        elif a.startswith("-a") and not a.startswith("--"):
            value = a[2:]
        else:
            continue
        try:
            cap = int(value, 0)
        except ValueError:
            cap = None
    return cap


def default_choice(fallback: str) -> str:
    choice = os.environ.get("IBQOS_IBSIM", fallback)
    if choice not in CHOICES:
        raise InputError(f"IBQOS_IBSIM={choice!r}: expected one of {', '.join(CHOICES)}", field="IBQOS_IBSIM")
    return choice


def patched_dir() -> Path:
    return paths.build_dir() / PATCHED_DIR


def patched_unavailable() -> str | None:
    """None when the patched ibsim is built, else why not (build.sh's reason)."""
    d = patched_dir()
    if (d / "ibsim").is_file():
        return None
    reason = d / "unavailable.txt"
    if reason.is_file():
        return reason.read_text().strip()
    return f"{d}/ibsim is not built (make build)"


def patched_skip_reason() -> str | None:
    """For tests that need the patched ibsim: why to skip them, or None to run them. Where
    IBQOS_REQUIRE_PATCHED_IBSIM=1 (.ci/run, which builds it from the vendored tarball) they run
    even without a build, and fail."""
    missing = patched_unavailable()
    if missing is None or os.environ.get("IBQOS_REQUIRE_PATCHED_IBSIM") == "1":
        return None
    return f"patched ibsim not built: {missing}"


def resolve(choice: str) -> IbsimBinary:
    if choice not in CHOICES:
        raise InputError(f"ibsim {choice!r}: expected one of {', '.join(CHOICES)}", field="ibsim")
    missing = patched_unavailable()
    if choice == "patched" and missing:
        raise ExternalError(f"the patched ibsim is not available: {missing}")
    if choice == "debian" or missing:
        return IbsimBinary("debian", paths.require_tool("ibsim", "ibsim-utils"), DEBIAN_VLARB_CAP, False)
    d = patched_dir()
    try:
        info = json.loads((d / "ibsim-patched.json").read_text())
        built_from = f"{info['source']} + {info['patch']}"
    except (OSError, ValueError, KeyError):
        built_from = "build record missing"
    return IbsimBinary("patched", str(d / "ibsim"), PATCHED_VLARB_CAP, True, built_from)
