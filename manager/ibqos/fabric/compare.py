"""Differences between two fabric models, for people: one line per difference, empty = equal.

A port attribute that one source does not record (0 or "", see model.py) is not compared:
OpenSM's dumps carry no VLCap, OperVLs, MTU or MTUCap. VLArb and VLHighLimit are compared only with
vlarb=True, because the dumps do not carry them at all.
"""

from __future__ import annotations

from .model import NO_ROUTE, Fabric, Node, Port

_PORT_ATTRS = ("guid", "lid", "lmc", "width", "speed", "vl_cap", "op_vls", "mtu", "mtu_cap")
MAX_LFT_LINES = 3  # per switch; the rest is counted


def diff(a: Fabric, b: Fabric, *, vlarb: bool = True) -> list[str]:
    out: list[str] = []
    for guid in sorted(a.nodes.keys() - b.nodes.keys()):
        out.append(f"{_name(a.nodes[guid])}: only in {a.source or 'a'}")
    for guid in sorted(b.nodes.keys() - a.nodes.keys()):
        out.append(f"{_name(b.nodes[guid])}: only in {b.source or 'b'}")
    for guid in sorted(a.nodes.keys() & b.nodes.keys()):
        out += _diff_node(a.nodes[guid], b.nodes[guid], vlarb)
    return out


def _name(n: Node) -> str:
    return f"{n.kind} {n.desc!r} 0x{n.guid:016x}"


def _diff_node(x: Node, y: Node, vlarb: bool) -> list[str]:
    out: list[str] = []
    name = _name(x)
    for attr in ("kind", "desc", "nports"):
        if getattr(x, attr) != getattr(y, attr):
            out.append(f"{name}: {attr} {getattr(x, attr)!r} != {getattr(y, attr)!r}")
    for num in sorted(x.ports.keys() ^ y.ports.keys()):
        side = "first" if num in x.ports else "second"
        out.append(f"{name} port {num}: only in the {side} model")
    for num in sorted(x.ports.keys() & y.ports.keys()):
        out += [f"{name} port {num}: {d}" for d in _diff_port(x.ports[num], y.ports[num], vlarb)]
    out += _diff_lft(name, x.lft, y.lft)
    for key in sorted(x.sl2vl.keys() | y.sl2vl.keys()):
        vx, vy = x.sl2vl.get(key), y.sl2vl.get(key)
        if vx != vy:
            out.append(f"{name} sl2vl in {key[0]} out {key[1]}: {_vls(vx)} != {_vls(vy)}")
    return out


def _diff_port(p: Port, q: Port, vlarb: bool) -> list[str]:
    out = []
    for attr in _PORT_ATTRS:
        u, v = getattr(p, attr), getattr(q, attr)
        if u and v and u != v:
            out.append(f"{attr} {u!r} != {v!r}")
    if p.remote != q.remote:
        out.append(f"remote {_peer(p.remote)} != {_peer(q.remote)}")
    if vlarb and p.vlarb != q.vlarb:
        out.append(f"vlarb {p.vlarb} != {q.vlarb}")
    return out


def _diff_lft(name: str, x: list[int], y: list[int]) -> list[str]:
    n = max(len(x), len(y))
    x = x + [NO_ROUTE] * (n - len(x))
    y = y + [NO_ROUTE] * (n - len(y))
    bad = [lid for lid in range(n) if x[lid] != y[lid]]
    out = [f"{name} lft lid {lid}: port {x[lid]} != {y[lid]}" for lid in bad[:MAX_LFT_LINES]]
    if len(bad) > MAX_LFT_LINES:
        out.append(f"{name} lft: {len(bad) - MAX_LFT_LINES} more LIDs differ")
    return out


def _peer(r: tuple[int, int] | None) -> str:
    return f"0x{r[0]:016x}/{r[1]}" if r else "none"


def _vls(v: tuple[int, ...] | None) -> str:
    return "".join(f"{x:x}" for x in v) if v else "none"
