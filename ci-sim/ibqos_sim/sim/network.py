"""The fabric model, flattened into the simulator core's arrays.

Only what OpenSM (and the plugin) programmed is used: links, LFTs, per-(in, out) SL2VL,
VLArb and VLHighLimit per port, operational VLs. Routes are never recomputed: a switch
forwards a packet for endpoint e to `lft[lid(e)]`, its base LID (base_lid_note).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from ibqos.errors import InputError
from ibqos.fabric.index import NO_SL2VL_NOTE, build_index, ca_sl2vl
from ibqos.fabric.model import Fabric, Port


@dataclass
class Network:
    fabric: Fabric
    source: str  # file named in error messages
    nodes: list[int]  # node index -> GUID
    port_base: np.ndarray  # node index -> first global port
    nslots: np.ndarray  # node index -> ports 0..nslots-1
    ports: list[tuple[int, int]]  # global port -> (GUID, port number)
    endpoints: list[tuple[int, int]]  # endpoint -> (CA GUID, port number)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    lmc: int = 0  # the highest LMC of a CA port: its 2^lmc - 1 LIDs above the base carry no traffic

    @property
    def n_endpoints(self) -> int:
        return len(self.endpoints)

    def node_desc(self, guid: int) -> str:
        n = self.fabric.nodes[guid]
        return n.desc or f"0x{guid:016x}"

    def ep_desc(self, e: int) -> str:
        guid, port = self.endpoints[e]
        n = self.fabric.nodes[guid]
        return self.node_desc(guid) if n.nports <= 1 else f"{self.node_desc(guid)}:{port}"

    def ep_switch(self, e: int) -> int | None:
        """GUID of the switch the endpoint is cabled to."""
        guid, port = self.endpoints[e]
        remote = self.fabric.nodes[guid].ports[port].remote
        if remote and self.fabric.nodes[remote[0]].kind == "switch":
            return remote[0]
        return None


def base_lid_note(lmc: int) -> str:
    """What a simulation of a fabric with LMC > 0 leaves out: the LFT entries of a port's
    other LIDs (each its own route) are never used, so a bad one passes the simulation."""
    return (
        f"LMC {lmc}: packets go to each CA port's base LID only; the routes to its other "
        f"{(1 << lmc) - 1} LID{'s' if lmc > 1 else ''} carry no simulated traffic (verify checks them)"
    )


def _op_vls(port: Port, peer: Port, default: int) -> int:
    vals = [v for v in (port.op_vls, peer.op_vls) if v]
    return min(vals) if vals else default


# PLR0912 and PLR0915: one check per table the core needs, each with its one-line error
def compile_network(fabric: Fabric, *, rate_gbps: float, source: str = "fabric") -> Network:  # noqa: PLR0912, PLR0915
    """Raises InputError (one line, naming the node, port and table) for what cannot be simulated."""

    def err(where: str, fld: str, msg: str) -> InputError:
        return InputError(f"{where}: {msg}", file=source, field=fld)

    nodes = sorted(g for g, n in fabric.nodes.items() if n.kind in ("switch", "ca"))
    if not any(fabric.nodes[g].kind == "switch" for g in nodes):
        raise err("fabric", "nodes", "no switch")
    nslots = np.array([max([fabric.nodes[g].nports] + list(fabric.nodes[g].ports)) + 1 for g in nodes], dtype=np.uint32)
    port_base = np.zeros(len(nodes), dtype=np.uint32)
    if len(nodes) > 1:
        port_base[1:] = np.cumsum(nslots)[:-1]
    index = {g: i for i, g in enumerate(nodes)}
    n_ports = int(nslots.sum())
    ports = [(g, k) for g, ns in zip(nodes, nslots, strict=True) for k in range(int(ns))]

    def gport(guid: int, num: int) -> int:
        return int(port_base[index[guid]]) + num

    # endpoints, LFTs and SL2VL by the rules the verifier uses (ibqos.fabric.index)
    ix = build_index(fabric, source)
    endpoints = ix.ep
    if len(endpoints) < 1:
        raise err("fabric", "nodes", "no CA port with a LID and a link")
    ep_of = {k: e for e, k in enumerate(endpoints)}
    sw_of = {g: s for s, g in enumerate(ix.sw_guid)}

    # data VLs: from PortInfo, else the highest VL any SL2VL table uses (dumps carry no OperVLs)
    used = [v for n in fabric.nodes.values() for row in n.sl2vl.values() for v in row if v < 15]
    default_vls = max(used, default=0) + 1

    peer = np.full(n_ports, -1, dtype=np.int32)
    op_vls = np.ones(n_ports, dtype=np.uint8)
    rate = np.full(n_ports, rate_gbps, dtype=np.float64)
    limit = np.full(n_ports, 255, dtype=np.uint8)
    hoff = np.zeros(n_ports, dtype=np.uint32)
    hlen = np.zeros(n_ports, dtype=np.uint32)
    loff = np.zeros(n_ports, dtype=np.uint32)
    llen = np.zeros(n_ports, dtype=np.uint32)
    entries: list[tuple[int, int]] = []
    notes: list[str] = []
    synthesized = 0
    for g in nodes:
        n = fabric.nodes[g]
        for p in n.ports.values():
            if not p.remote or p.num == 0:
                continue
            if (far := fabric.nodes.get(p.remote[0])) is not None and far.kind == "router":
                continue  # a router ends the subnet: no CA pair's route crosses it
            if p.remote[0] not in index:
                raise err(
                    f"{fabric.nodes[g].desc or hex(g)} port {p.num}",
                    "remote",
                    f"links to unknown node 0x{p.remote[0]:016x}",
                )
            rp = fabric.nodes[p.remote[0]].ports.get(p.remote[1])
            if rp is None or rp.remote != (g, p.num):
                raise err(f"{n.desc or hex(g)} port {p.num}", "remote", "the link is not symmetric")
            i = gport(g, p.num)
            peer[i] = gport(*p.remote)
            vls = _op_vls(p, rp, default_vls)
            op_vls[i] = vls
            hoff[i] = len(entries)
            if p.vlarb is not None:
                entries.extend(p.vlarb.high)
                hlen[i] = len(p.vlarb.high)
                loff[i] = len(entries)
                entries.extend(p.vlarb.low)
                llen[i] = len(p.vlarb.low)
                limit[i] = p.vlarb.limit
                if not any(w for _, w in p.vlarb.high + p.vlarb.low):
                    raise err(f"{n.desc or hex(g)} port {p.num}", "vlarb", "every entry has weight 0")
            elif vls == 1:
                # one data VL: the port has no VLArb (OpenSM sends none) and always sends VL0
                loff[i] = len(entries)
                entries.append((0, 255))
                llen[i] = 1
                synthesized += 1
            else:
                raise err(
                    f"{n.desc or hex(g)} port {p.num}",
                    "vlarb",
                    f"missing for a port with {vls} operational VLs "
                    "(dumps carry no VLArb: use a read-back fabric.json or fill it from the plan)",
                )
    if synthesized:
        notes.append(f"{synthesized} single-VL ports without VLArb always send VL0")

    # SL2VL: deduplicated rows, an index matrix per node
    rows: dict[tuple[int, ...], int] = {tuple([0] * 16): 0}
    sl2vl_off = np.zeros(len(nodes), dtype=np.uint32)
    idx_parts = []
    off = 0
    for ni, g in enumerate(nodes):
        n = fabric.nodes[g]
        ns = int(nslots[ni])
        mat = np.zeros(ns * ns, dtype=np.uint16)
        linked = [p.num for p in n.ports.values() if p.remote and p.num > 0]
        pairs = [(i, o) for i in linked for o in linked] if n.kind == "switch" else [(0, o) for o in linked]
        for i, o in pairs:
            if n.kind == "switch":
                row = tuple(int(v) for v in ix.sl2vl[sw_of[g], i, o])
            elif (g, o) in ep_of:
                row = tuple(int(v) for v in ix.ep_sl2vl[ep_of[(g, o)]])
            else:  # a linked CA port without a LID sends nothing
                row = ca_sl2vl(n, o) or (0,) * 16
            if len(row) != 16:
                raise err(f"{n.desc or hex(g)} in {i} out {o}", "sl2vl", "needs 16 VLs")
            mat[i * ns + o] = rows.setdefault(row, len(rows))
        sl2vl_off[ni] = off
        off += ns * ns
        idx_parts.append(mat)
    if not ix.has_sl2vl:
        notes.append(NO_SL2VL_NOTE)
    if ix.lmc:
        notes.append(base_lid_note(ix.lmc))
    if len(rows) > 65535:
        raise err("fabric", "sl2vl", "more than 65535 distinct SL2VL rows")

    # routes: the LFT entry of each endpoint's LID, from the index (NO_ROUTE past a table)
    route_off = np.zeros(len(nodes), dtype=np.uint32)
    for si, g in enumerate(ix.sw_guid):
        if not fabric.nodes[g].lft:
            raise err(fabric.nodes[g].desc or hex(g), "lft", "missing (the switch has no LFT)")
        route_off[index[g]] = si * len(endpoints)
    routes = ix.lft[:, ix.ep_lid].astype(np.uint8).reshape(-1)

    is_switch = np.array([fabric.nodes[g].kind == "switch" for g in nodes], dtype=np.uint8)
    arr: dict[str, np.ndarray] = dict(
        node_is_switch=is_switch,
        node_nports=nslots,
        node_port_base=port_base,
        node_route_off=route_off,
        node_sl2vl_off=sl2vl_off,
        port_peer=peer,
        port_op_vls=op_vls,
        port_rate_gbps=rate,
        port_arb_high_off=hoff,
        port_arb_high_len=hlen,
        port_arb_low_off=loff,
        port_arb_low_len=llen,
        port_arb_limit=limit,
        arb_entries=np.array(entries or [(0, 0)], dtype=np.uint8).reshape(-1, 2),
        routes=routes if len(routes) else np.zeros(1, dtype=np.uint8),
        sl2vl_idx=np.concatenate(idx_parts).astype(np.uint16),
        sl2vl_rows=np.array(sorted(rows, key=rows.__getitem__), dtype=np.uint8).reshape(-1),
        ep_port=np.array([gport(g, p) for g, p in endpoints], dtype=np.uint32),
    )
    if any(v > 15 for v in arr["sl2vl_rows"]):
        raise err("fabric", "sl2vl", "VL above 15")
    if fabric.path_sls is not None:
        arr["pair_sl"] = _pair_sls(fabric, endpoints)
        notes.append(f"each CA pair's packets on the SL the SA gave it ({len(fabric.path_sls)} pairs)")
    return Network(fabric, source, nodes, port_base, nslots, ports, endpoints, arr, notes, ix.lmc)


def _pair_sls(fabric: Fabric, endpoints: list[tuple[int, int]]) -> np.ndarray:
    """[source endpoint][destination endpoint] -> SL, 255 where the SA gave none."""
    lids = [fabric.nodes[g].ports[p].lid for g, p in endpoints]
    n = len(endpoints)
    out = np.full((n, n), 255, dtype=np.uint8)
    if not fabric.path_sls:
        return out.reshape(-1)
    # LID -> endpoint index (-1: no endpoint), then every (slid, dlid, sl) at once
    index = np.full(max(*lids, *(max(k) for k in fabric.path_sls)) + 1, -1, dtype=np.int64)
    index[lids] = np.arange(n)
    psl = np.array([(s, d, sl) for (s, d), sl in fabric.path_sls.items()], dtype=np.int64)
    i, j = index[psl[:, 0]], index[psl[:, 1]]
    keep = (i >= 0) & (j >= 0) & (i != j)
    out[i[keep], j[keep]] = psl[keep, 2]
    return out.reshape(-1)
