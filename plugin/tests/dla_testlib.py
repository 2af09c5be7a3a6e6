"""Helpers for the dla plugin's fabric tests: run OpenSM with the plugin, read tables back with
infiniband-diags (the independent cross-check), ground-truth groups from generator names.

name_groups, port_kind and fig8_vl are the tests' independent reference for dla's groups,
port roles and SL2VL, written from seed 003 (/work/shared/seeds/003_*, "DLA") and not from the
plugin: groups come from the names the generator gave the switches, never from a discovery;
the channel kinds are the paper's terminal, local and global channels (§2.1, Fig. 1); the VL is
the paper's Fig. 8 function. Nothing here is imported by, or imports, the plugin's code."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest
from ibqos import paths
from ibqos.fabric.model import Fabric
from ibqos_sim.harness.resweep import SweepMark, wait_resweep

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


def heavy_sweep(sm) -> None:
    """One more heavy sweep of a running OpenSM (SIGHUP), waited for."""
    k = sm.sweeps()
    os.kill(sm.pid, signal.SIGHUP)
    sm.wait_for_sweeps(k + 1, timeout=120)


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
    """Seed 003 §2.1 (Fig. 1): the channel out of `port` is a terminal channel (tc) to an end
    node, a local channel (lc) to a switch of the same group, or a global channel (gc) to a
    switch of another group; "none" for port 0 and unlinked ports. Groups from the names."""
    p = fabric.nodes[guid].ports.get(port)
    if port == 0 or p is None or p.remote is None:
        return "none"
    peer = fabric.nodes[p.remote[0]]
    if peer.kind != "switch":
        return "terminal"
    return "local" if groups[peer.guid] == groups[guid] else "global"


def fig8_vl(sl_class: int, in_kind: str, out_kind: str) -> int:
    """Seed 003 Fig. 8: sl2vl(op, ip, sl) is VL 1 when op is a local channel and ip a global
    one, else VL 0, whatever the SL. ibqos runs Fig. 8 once per QoS class on the class's VL
    pair (2c, 2c+1) (docs/policy.md, "routing: dla"): the paper's VL 0/1 become 2c/2c+1."""
    return 2 * sl_class + (1 if in_kind == "global" and out_kind == "local" else 0)


def next_hops(fabric: Fabric) -> dict[tuple[str, int], str]:
    """(switch, destination port GUID) -> the node the LFT forwards to (or 'self')."""
    guid_of = {p.lid: p.guid for n in fabric.nodes.values() for p in n.ports.values() if p.lid}
    for n in fabric.switches():
        guid_of[n.lid] = n.guid
    out = {}
    for n in fabric.switches():
        for lid, port in enumerate(n.lft):
            if lid not in guid_of or port is None or port == 255:
                continue
            p = n.ports.get(port)
            out[(n.desc, guid_of[lid])] = fabric.nodes[p.remote[0]].desc if port and p and p.remote else "self"
    return out


def turn_vls(fabric: Fabric) -> dict[tuple[str, str, str], set]:
    """(switch, in-peer, out-peer) -> its SL2VL rows over the cabled ports and port 0
    (parallel cables: the set of theirs)."""
    out: dict[tuple[str, str, str], set] = {}
    for n in fabric.switches():
        peer = {p: fabric.nodes[q.remote[0]].desc for p, q in n.ports.items() if q.remote}
        peer[0] = "self"
        for (i, o), row in n.sl2vl.items():
            if i in peer and o in peer:
                out.setdefault((n.desc, peer[i], peer[o]), set()).add(row)
    return out


def assert_same_routes(a: Fabric, b: Fabric) -> None:
    """a and b, one fabric under two numberings, route alike: per (switch, destination) the same
    next node, per switch turn the same VLs (nodes by description, destinations by GUID)."""
    ha, hb = next_hops(a), next_hops(b)
    assert len(ha) == len(hb) > 0
    moved = sorted(k for k in ha if ha[k] != hb.get(k))
    assert moved == [], f"{len(moved)} of {len(ha)} routes differ under another numbering: {moved[:5]}"
    va, vb = turn_vls(a), turn_vls(b)
    differ = sorted(k for k in va.keys() | vb.keys() if va.get(k) != vb.get(k))
    assert differ == [], f"{len(differ)} turns differ in their VLs: {differ[:5]}"


def reflected(fabric: Fabric, faults, down: bool) -> bool:
    by_name = {n.desc: n for n in fabric.nodes.values()}
    for kind, node, port in faults:
        n = by_name.get(node)
        present = n is not None if kind == "switch" else bool(n and n.ports.get(port) and n.ports[port].remote)
        if present == down:
            return False
    return True


def change_links(h, sm, faults, down: bool):
    """Take `faults` down (or bring them back) through ibsim's console under the running `sm`:
    ("link", node, port) or ("switch", node, None), nodes by description. Returns the sweep
    whose dumps show the change."""
    sweep = None
    for _kind, node, port in faults if down else reversed(faults):
        sweep = (h.unlink if down else h.relink)(node, port, sm=sm)
    for _ in range(4):  # a sweep that began before the change does not show it
        if reflected(sm.load_dumps(), faults, down):
            return sweep
        sweep = wait_resweep(sm, SweepMark(Path(sm.log), sweep.end_offset))
    raise AssertionError(f"dumps never showed {faults} {'down' if down else 'back'}")
