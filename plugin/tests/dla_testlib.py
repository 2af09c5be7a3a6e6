"""Helpers for the dla plugin's fabric tests: run OpenSM with the plugin, read tables back with
infiniband-diags (the independent cross-check), ground-truth groups from generator names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ibqos import paths
from ibqos.fabric.model import Fabric

ENGINE = "dla,minhop"
REFUSAL = re.compile(r"ERR D1A[0-2]: dla: fabric refused: (.+); falling back to the next routing engine$")
TABLES_REJECTED = re.compile(r"ERR D1A3: dla: table file rejected: (.+); SL2VL uses class 0")
_SW_NAME = re.compile(r"^sw-g(\d+)-s(\d+)$")


def require_plugin() -> Path:
    lib = paths.plugin_dir() / "libibqos.so"
    if not lib.exists():
        pytest.fail(f"{lib} is missing: run 'make build'")
    return lib


def run_dla(h, *, conf: dict | None = None, tables: Path | None = None, check: bool = True, **kw):
    require_plugin()
    return h.run_sm(
        engine=ENGINE, plugin=True, plugin_options=tables, conf={"qos": "TRUE", **(conf or {})}, check=check, **kw
    )


def start_dla(h, *, conf: dict | None = None, tables: Path | None = None, engine: str = ENGINE, **kw):
    require_plugin()
    return h.start_sm(engine=engine, plugin=True, plugin_options=tables, conf={"qos": "TRUE", **(conf or {})}, **kw)


def refusals(lines) -> list[str]:
    return [m.group(1) for ln in lines if (m := REFUSAL.search(ln.text))]


def name_groups(fabric: Fabric) -> dict[int, int]:
    """Switch GUID -> group, from the generator's names (tests may; the plugin may not)."""
    out = {}
    for n in fabric.switches():
        m = _SW_NAME.match(n.desc)
        assert m, f"not a generated dragonfly switch name: {n.desc!r}"
        out[n.guid] = int(m.group(1))
    return out


def port_kind(fabric: Fabric, groups: dict[int, int], guid: int, port: int) -> str:
    """terminal / local / global / none, from the names' groups."""
    p = fabric.nodes[guid].ports.get(port)
    if port == 0 or p is None or p.remote is None:
        return "none"
    peer = fabric.nodes[p.remote[0]]
    if peer.kind != "switch":
        return "terminal"
    return "local" if groups[peer.guid] == groups[guid] else "global"


def fig8_vl(sl_class: int, in_kind: str, out_kind: str) -> int:
    """Seed 003 Fig. 8 per class: shift to 2c+1 from a global in-port to a local out-port."""
    return 2 * sl_class + (1 if in_kind == "global" and out_kind == "local" else 0)
