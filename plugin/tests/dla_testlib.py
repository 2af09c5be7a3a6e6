"""Helpers for the dla plugin's fabric tests: run OpenSM with the plugin, read tables back with
infiniband-diags (the independent cross-check), ground-truth groups from generator names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ibqos import paths
from ibqos.fabric.model import Fabric
from ibqos.proc import run_command

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
    return h.run_sm(engine=ENGINE, plugin=True, plugin_options=tables,
                    conf={"qos": "TRUE", **(conf or {})}, check=check, **kw)


def start_dla(h, *, conf: dict | None = None, tables: Path | None = None, **kw):
    require_plugin()
    return h.start_sm(engine=ENGINE, plugin=True, plugin_options=tables,
                      conf={"qos": "TRUE", **(conf or {})}, **kw)


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


# ---- infiniband-diags read-back (independent of the plugin and of ibqos's own reader) ----

_SL2VL_ROW = re.compile(r"^ports: in\s+(\d+), out\s+(\d+):\s*\|(.*)\|\s*$")


def smpquery_sl2vl(h, lid: int, out_port: int) -> dict[int, tuple[int, ...]]:
    """in-port -> 16 VLs for one output port."""
    text = h.diag(["smpquery", "sl2vl", str(lid), str(out_port)]).stdout
    rows = {}
    for line in text.splitlines():
        m = _SL2VL_ROW.match(line)
        if m:
            rows[int(m.group(1))] = tuple(int(x) for x in m.group(3).split("|"))
    assert rows, f"smpquery sl2vl {lid} {out_port}: no table in {text!r}"
    return rows


def smpquery_vlarb(h, lid: int, port: int) -> dict[str, list[tuple[int, int]]]:
    """{'low': [(vl, weight)...], 'high': [...]}, as many entries as the port's caps."""
    text = h.diag(["smpquery", "vlarb", str(lid), str(port)]).stdout
    out: dict[str, list[tuple[int, int]]] = {}
    table = None
    vls: list[int] = []
    for line in text.splitlines():
        if line.startswith("# Low priority"):
            table = "low"
        elif line.startswith("# High priority"):
            table = "high"
        elif line.startswith("VL") and table:
            vls = [int(x, 16) for x in line.split("|")[1:-1]]
        elif line.startswith("WEIGHT") and table:
            ws = [int(x, 16) for x in line.split("|")[1:-1]]
            out[table] = list(zip(vls, ws))
    assert set(out) == {"low", "high"}, f"smpquery vlarb {lid} {port}: {text!r}"
    return out


# ---- ibdmchk: the independent credit-loop checker from ibutils ----

def write_ibdmchk_slvl(fabric: Fabric, path: Path) -> Path:
    """ibdmchk's -d file: `0x<switch guid> <in> <out> 0x<sl0><sl1> ...` (8 bytes of VL nibbles)."""
    lines = []
    for n in sorted(fabric.switches(), key=lambda n: n.guid):
        for (i, o), vls in sorted(n.sl2vl.items()):
            pairs = " ".join(f"0x{vls[2 * k]:x}{vls[2 * k + 1]:x}" for k in range(8))
            lines.append(f"0x{n.guid:016x} {i} {o} {pairs}")
    path.write_text("\n".join(lines) + "\n")
    return path


def ibdmchk(dumps: Path, fabric: Fabric, workdir: Path) -> str:
    """Run ibdmchk on OpenSM's dumps with the SL2VL tables; its verdict is in the output (it
    crashes after printing, so the exit code means nothing)."""
    tool = paths.require_tool("ibdmchk", "ibutils")
    slvl = write_ibdmchk_slvl(fabric, workdir / "ibdmchk.slvl")
    cmd = [tool, "-s", str(dumps / "opensm-subnet.lst"), "-f", str(dumps / "opensm.fdbs"),
           "-d", str(slvl)]
    if (dumps / "opensm.mcfdbs").exists():
        cmd += ["-m", str(dumps / "opensm.mcfdbs")]
    cp = run_command(cmd, timeout=300, cwd=workdir, check=False)
    return cp.stdout + cp.stderr
