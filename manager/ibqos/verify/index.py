"""The fabric model as integer arrays: what route walking and the CDG need, nothing else.

Switches are numbered 0..S-1, CA ports ("endpoints") 0..E-1. A directed link is named by the
port it leaves from: switch port (s, o) is link `s * P + o`; a CA port gets no link id
because a channel out of or into a CA can never lie on a dependency cycle (a CA forwards
nothing). A channel is `link * 16 + vl`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..fabric.model import NO_ROUTE, Fabric

NO_VL = 255  # sl2vl entry absent from the model
NONE = -1


@dataclass
class FabricIndex:
    fabric: Fabric
    sw_guid: list[int]  # switch index -> node GUID
    ep: list[tuple[int, int]]  # endpoint index -> (CA GUID, port)
    ep_lid: np.ndarray  # (E,) base LID
    ep_sw: np.ndarray  # (E,) switch the CA port is cabled to, -1 if none
    ep_swport: np.ndarray  # (E,) that switch's port
    P: int  # ports per switch row (max port number + 1)
    lft: np.ndarray  # (S, L) out port per DLID; NO_ROUTE past the table
    peer_sw: np.ndarray  # (S, P) switch at the far end, -1 if none / a CA
    peer_port: np.ndarray  # (S, P) port number at the far end, 0 if none
    peer_ep: np.ndarray  # (S, P) endpoint at the far end, -1 if none / a switch
    sl2vl: np.ndarray  # (S, P, P, 16) uint8; absent tables read as VL 0
    ep_sl2vl: np.ndarray  # (E, 16) uint8 injection VL per SL
    op_vls: np.ndarray  # (S, P) operational data VLs of the out port, 0 unknown
    ep_op_vls: np.ndarray  # (E,)
    lid_to_ep: dict[int, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def S(self) -> int:
        return len(self.sw_guid)

    @property
    def E(self) -> int:
        return len(self.ep)

    def sw_desc(self, s: int) -> str:
        n = self.fabric.nodes[self.sw_guid[s]]
        return n.desc or f"0x{n.guid:016x}"

    def ep_desc(self, e: int) -> str:
        guid, port = self.ep[e]
        n = self.fabric.nodes[guid]
        name = n.desc or f"0x{guid:016x}"
        return name if n.nports == 1 else f"{name}:{port}"

    def channel_str(self, ch: int) -> str:
        """`switch:port/vl`, the switch by node description."""
        link, vl = divmod(int(ch), 16)
        s, o = divmod(link, self.P)
        return f"{self.sw_desc(s)}:{o}/{vl}"


def build_index(fabric: Fabric) -> FabricIndex:
    switches = sorted(n.guid for n in fabric.switches())
    sw_of = {g: i for i, g in enumerate(switches)}
    eps = sorted((n.guid, p.num) for n in fabric.cas() for p in n.ports.values() if p.lid and p.num > 0)
    ep_of = {k: i for i, k in enumerate(eps)}
    S, E = len(switches), len(eps)
    P = 1 + max([n.nports for n in fabric.switches()] + [max(n.ports, default=0) for n in fabric.switches()] + [1])
    L = 1 + max([len(n.lft) - 1 for n in fabric.switches()] + [fabric.nodes[g].ports[p].lid for g, p in eps] + [0])
    warnings: list[str] = []

    lft = np.full((S, L), NO_ROUTE, dtype=np.int16)
    peer_sw = np.full((S, P), NONE, dtype=np.int32)
    peer_port = np.zeros((S, P), dtype=np.int16)
    peer_ep = np.full((S, P), NONE, dtype=np.int32)
    sl2vl = np.full((S, P, P, 16), NO_VL, dtype=np.uint8)
    op_vls = np.zeros((S, P), dtype=np.int16)
    no_table = 0
    for s, g in enumerate(switches):
        n = fabric.nodes[g]
        if n.lft:
            lft[s, : len(n.lft)] = np.asarray(n.lft[:L], dtype=np.int16)
        for num, p in n.ports.items():
            op_vls[s, num] = p.op_vls
            if p.remote is None or num == 0:
                continue
            rg, rp = p.remote
            peer_port[s, num] = rp
            if rg in sw_of:
                peer_sw[s, num] = sw_of[rg]
            elif (rg, rp) in ep_of:
                peer_ep[s, num] = ep_of[(rg, rp)]
        for (i, o), vls in n.sl2vl.items():
            if i < P and o < P:
                sl2vl[s, i, o] = vls
        if not n.sl2vl:
            no_table += 1
    if no_table:
        warnings.append(f"{no_table} switches have no SL2VL tables: assumed VL 0")
    # A switch without a table for an (in, out) pair sends on VL 0 (one data VL needs no table).
    sl2vl[sl2vl == NO_VL] = 0
    # Past the real port count an LFT entry names a port that does not exist.
    lft[(lft >= P) & (lft != NO_ROUTE)] = NO_ROUTE

    ep_lid = np.zeros(E, dtype=np.int64)
    ep_sw = np.full(E, NONE, dtype=np.int32)
    ep_swport = np.zeros(E, dtype=np.int16)
    ep_sl2vl = np.full((E, 16), NO_VL, dtype=np.uint8)
    ep_op_vls = np.zeros(E, dtype=np.int16)
    lid_to_ep: dict[int, int] = {}
    lmc = 0
    for e, (g, num) in enumerate(eps):
        n = fabric.nodes[g]
        p = n.ports[num]
        ep_lid[e] = p.lid
        lid_to_ep[p.lid] = e
        lmc = max(lmc, p.lmc)
        ep_op_vls[e] = p.op_vls
        if p.remote and p.remote[0] in sw_of:
            ep_sw[e] = sw_of[p.remote[0]]
            ep_swport[e] = p.remote[1]
        vls = n.sl2vl.get((0, num))
        if vls is not None:
            ep_sl2vl[e] = vls
    if lmc:
        warnings.append(f"LMC {lmc}: only routes to base LIDs are checked")
    missing_ep = int(np.count_nonzero((ep_sl2vl == NO_VL).all(axis=1)))
    if missing_ep and missing_ep < E:
        warnings.append(f"{missing_ep} CA ports have no SL2VL table: assumed VL 0")
    # A port without a table maps every SL to VL 0 (one data VL needs no table).
    ep_sl2vl[ep_sl2vl == NO_VL] = 0
    return FabricIndex(
        fabric=fabric,
        sw_guid=switches,
        ep=eps,
        ep_lid=ep_lid,
        ep_sw=ep_sw,
        ep_swport=ep_swport,
        P=P,
        lft=lft,
        peer_sw=peer_sw,
        peer_port=peer_port,
        peer_ep=peer_ep,
        sl2vl=sl2vl,
        ep_sl2vl=ep_sl2vl,
        op_vls=op_vls,
        ep_op_vls=ep_op_vls,
        lid_to_ep=lid_to_ep,
        warnings=warnings,
    )
