"""One route at a time, straight from the fabric model: the readable reference.

A packet from CA port `src` to the base LID of CA port `dst` with service level `sl`:
the CA sends it on VL `sl2vl[(0, port)][sl]`; every switch picks the out port from its LFT and
the VL from `sl2vl[(in, out)][sl]`. The packet is lost when an LFT has no entry, the port leads
nowhere or to another CA, the VL is 15 or not operational on the out port, or it loops.

`verify_fabric` does the same for all pairs at once on arrays (analyze.py); the tests check
that both agree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from ..fabric.model import NO_ROUTE, Fabric

PortRef = tuple[int, int]  # (node GUID, port number)
Hop = tuple[int, int, int, int]  # (switch GUID, in port, out port, VL)
SlOf = Callable[[PortRef, PortRef], int]


class Route(NamedTuple):
    src: PortRef
    dst: PortRef
    hops: list[Hop]


@dataclass
class Walk:
    """Where one packet went. status: ok, no_route, dead_port, wrong_ca, loop, dropped."""

    src: PortRef
    dst: PortRef
    sl: int
    inject_vl: int
    hops: list[Hop] = field(default_factory=list)
    status: str = "ok"
    detail: str = ""


def endpoints(fabric: Fabric) -> list[PortRef]:
    """Every CA port with a LID, in a stable order."""
    return sorted((n.guid, p.num) for n in fabric.cas() for p in n.ports.values() if p.lid and p.num > 0)


def _vl(table: tuple[int, ...] | None, sl: int) -> int:
    return table[sl] if table is not None else 0


def _lost_vl(vl: int, op_vls: int) -> bool:
    return vl == 15 or (op_vls > 0 and vl >= op_vls)


def walk_route(fabric: Fabric, src: PortRef, dst: PortRef, sl: int, lid_offset: int = 0) -> Walk:
    """The route to dst's base LID, or to base + lid_offset (one of an LMC's LIDs)."""
    nodes = fabric.nodes
    ca, cport = nodes[src[0]], nodes[src[0]].ports[src[1]]
    dlid = nodes[dst[0]].ports[dst[1]].lid + lid_offset
    w = Walk(src, dst, sl, _vl(ca.sl2vl.get((0, src[1])), sl))
    if _lost_vl(w.inject_vl, cport.op_vls):
        w.status, w.detail = "dropped", f"CA sends SL {sl} on VL {w.inject_vl}"
        return w
    here = cport.remote
    seen: set[int] = set()
    while here is not None:
        guid, in_port = here
        node = nodes[guid]
        if node.kind != "switch":
            if here != dst:
                w.status, w.detail = "wrong_ca", f"delivered to {node.desc or hex(guid)}"
            return w
        if guid in seen:
            names = [nodes[g].desc or hex(g) for g, *_ in w.hops]
            loop = names[[g for g, *_ in w.hops].index(guid) :]
            w.status, w.detail = "loop", " -> ".join(loop + loop[:1])
            return w
        seen.add(guid)
        out = node.route(dlid)
        port = node.ports.get(out)
        if out in (NO_ROUTE, 0) or port is None or port.remote is None:
            w.status = "no_route" if out == NO_ROUTE else "dead_port"
            w.detail = f"{node.desc or hex(guid)} " + (
                f"has no LFT entry for LID {dlid}" if out == NO_ROUTE else f"port {out} leads nowhere"
            )
            return w
        vl = _vl(node.sl2vl.get((in_port, out)), sl)
        w.hops.append((guid, in_port, out, vl))
        if _lost_vl(vl, port.op_vls):
            w.status, w.detail = "dropped", f"{node.desc or hex(guid)}:{out} maps SL {sl} to VL {vl}"
            return w
        here = port.remote
    w.status, w.detail = "dead_port", "CA port is not cabled"
    return w


def iter_walks(fabric: Fabric, *, sl: int = 0, sl_of: SlOf | None = None) -> Iterator[Walk]:
    eps = endpoints(fabric)
    for dst in eps:
        for src in eps:
            if src != dst:
                yield walk_route(fabric, src, dst, sl_of(src, dst) if sl_of else sl)


def iter_routes(fabric: Fabric, *, sl: int = 0, sl_of: SlOf | None = None) -> Iterator[Route]:
    """Every delivered CA→CA route with its switch hops `(switch GUID, in, out, VL)`.

    Routes that are lost are skipped: `verify_fabric` reports them. `sl_of(src, dst)` gives a
    per-pair SL (e.g. `PathSLs.sl_of` from SA path records); otherwise every pair uses `sl`.
    """
    for w in iter_walks(fabric, sl=sl, sl_of=sl_of):
        if w.status == "ok":
            yield Route(w.src, w.dst, w.hops)
