"""The fabric model compiled into integer arrays, once, for every stage that walks routes: the
verifier (reachability, hops, the CDG) and the simulator's network builder read the same
endpoints, LFTs and SL2VL through the same rules, so they cannot judge one fabric.json
differently.

The rules (docs/fabric-model.md, "The compiled index"):
- An endpoint is a CA port with a LID and a link (a port nothing is cabled to can neither
  send nor receive).
- SL2VL: when the model holds no SL2VL table at all (OpenSM dumps without qos, ibsim before
  any QoS), every SL uses VL 0, with a note. Otherwise every switch (in, out) pair of linked
  external ports with in != out, and every endpoint, must have its table: a missing one is
  an InputError naming the switch and ports. Pairs a packet never takes (in == out, port 0,
  unlinked ports) read VL 0.
- A CA port's table is `sl2vl[(0, port)]` (the model's key), else `(port, port)`, else
  `(0, 0)` (a source that wrote the CA's one table without a port).

Numbering: switches 0..S-1 by GUID, endpoints 0..E-1 by (GUID, port). A directed link is named
by the port it leaves from: switch port (s, o) is link `s * P + o`; a CA port gets no link id
because a channel out of or into a CA can never lie on a dependency cycle (a CA forwards
nothing). A channel is `link * 16 + vl`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import InputError
from .model import NO_ROUTE, Fabric, Node

NO_VL = 255  # sl2vl entry absent from the model
NONE = -1
NO_SL2VL_NOTE = "no SL2VL tables in the model: every SL uses VL 0"

Array = npt.NDArray[np.integer[Any]]  # every table is of integers (LIDs, ports, VLs, indexes)


@dataclass
class FabricIndex:
    fabric: Fabric
    sw_guid: list[int]  # switch index -> node GUID
    ep: list[tuple[int, int]]  # endpoint index -> (CA GUID, port)
    ep_lid: Array  # (E,) base LID
    ep_sw: Array  # (E,) switch the CA port is cabled to, -1 if none
    ep_swport: Array  # (E,) that switch's port
    P: int  # ports per switch row (max port number + 1)
    lft: Array  # (S, L) out port per DLID; NO_ROUTE past the table
    peer_sw: Array  # (S, P) switch at the far end, -1 if none / a CA
    peer_port: Array  # (S, P) port number at the far end, 0 if none
    peer_ep: Array  # (S, P) endpoint at the far end, -1 if none / a switch
    sl2vl: Array  # (S, P, P, 16) uint8 VL per (in, out, SL)
    ep_sl2vl: Array  # (E, 16) uint8 injection VL per SL
    op_vls: Array  # (S, P) operational data VLs of the out port, 0 unknown
    ep_op_vls: Array  # (E,)
    has_sl2vl: bool = True  # False: the model holds no table, every SL uses VL 0
    lid_to_ep: dict[int, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    ep_lmc: Array = field(default_factory=lambda: np.zeros(0, dtype=np.int16))  # (E,) LMC: 2^lmc LIDs from ep_lid
    # (E,) the endpoint a CA port is cabled to directly (two hosts back to back), -1 if none
    ep_peer_ep: Array = field(default_factory=lambda: np.zeros(0, dtype=np.int32))

    @property
    def lmc(self) -> int:
        return int(self.ep_lmc.max()) if len(self.ep_lmc) else 0

    def at_lid_offset(self, k: int) -> FabricIndex:
        """The same fabric with each endpoint named by its LID base + k (its base LID where it
        has fewer LIDs): what the LFTs do with the routes to a port's other LIDs."""
        return replace(self, ep_lid=self.ep_lid + np.where(k < (1 << self.ep_lmc), k, 0))

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


def endpoints(fabric: Fabric) -> list[tuple[int, int]]:
    """Every CA port with a LID and a link, as (CA GUID, port), sorted."""
    return sorted((n.guid, p.num) for n in fabric.cas() for p in n.ports.values() if p.num > 0 and p.lid and p.remote)


def ca_sl2vl(node: Node, port: int) -> tuple[int, ...] | None:
    """The table a CA port injects with, or None when the model has none for it."""
    return node.sl2vl.get((0, port)) or node.sl2vl.get((port, port)) or node.sl2vl.get((0, 0))


def _missing(where: str, source: str | None) -> InputError:
    return InputError(
        f"{where}: SL2VL table missing (the model has tables elsewhere)", file=source or None, field="sl2vl"
    )


def build_index(fabric: Fabric, source: str | None = None) -> FabricIndex:
    """Raises InputError for a missing SL2VL table (see the rules above), naming `source`
    (default: the file or dump directory it was read from)."""
    source = source or fabric.read_from
    switches = sorted(n.guid for n in fabric.switches())
    sw_of = {g: i for i, g in enumerate(switches)}
    eps = endpoints(fabric)
    ep_of = {k: i for i, k in enumerate(eps)}
    S, E = len(switches), len(eps)
    P = 1 + max([n.nports for n in fabric.switches()] + [max(n.ports, default=0) for n in fabric.switches()] + [1])
    top = [(p := fabric.nodes[g].ports[num]).lid + (1 << p.lmc) - 1 for g, num in eps]  # an LMC's last LID
    L = 1 + max([len(n.lft) - 1 for n in fabric.switches()] + top + [0])
    has_sl2vl = any(n.sl2vl for n in fabric.nodes.values())
    warnings: list[str] = [] if has_sl2vl else [NO_SL2VL_NOTE]

    lft = np.full((S, L), NO_ROUTE, dtype=np.int16)
    peer_sw = np.full((S, P), NONE, dtype=np.int32)
    peer_port = np.zeros((S, P), dtype=np.int16)
    peer_ep = np.full((S, P), NONE, dtype=np.int32)
    sl2vl = np.full((S, P, P, 16), NO_VL, dtype=np.uint8)
    op_vls = np.zeros((S, P), dtype=np.int16)
    for s, g in enumerate(switches):
        n = fabric.nodes[g]
        if n.lft:
            lft[s, : len(n.lft)] = np.asarray(n.lft[:L], dtype=np.int16)
        linked = []
        for num, p in n.ports.items():
            op_vls[s, num] = p.op_vls
            if p.remote is None or num == 0:
                continue
            linked.append(num)
            rg, rp = p.remote
            peer_port[s, num] = rp
            if rg in sw_of:
                peer_sw[s, num] = sw_of[rg]
            elif (rg, rp) in ep_of:
                peer_ep[s, num] = ep_of[(rg, rp)]
        for (i, o), vls in n.sl2vl.items():
            if i < P and o < P:
                sl2vl[s, i, o] = vls
        if has_sl2vl:
            for i in linked:
                for o in linked:
                    if i != o and sl2vl[s, i, o, 0] == NO_VL:
                        raise _missing(f"switch {n.desc or hex(g)} in {i} out {o}", source)
    # Pairs no packet takes (in == out, port 0, unlinked), or no table anywhere: VL 0.
    sl2vl[sl2vl == NO_VL] = 0
    # Past the real port count an LFT entry names a port that does not exist.
    lft[(lft >= P) & (lft != NO_ROUTE)] = NO_ROUTE

    ep_lid = np.zeros(E, dtype=np.int64)
    ep_sw = np.full(E, NONE, dtype=np.int32)
    ep_swport = np.zeros(E, dtype=np.int16)
    ep_peer_ep = np.full(E, NONE, dtype=np.int32)
    ep_sl2vl = np.zeros((E, 16), dtype=np.uint8)
    ep_op_vls = np.zeros(E, dtype=np.int16)
    ep_lmc = np.zeros(E, dtype=np.int16)
    lid_to_ep: dict[int, int] = {}
    for e, (g, num) in enumerate(eps):
        n = fabric.nodes[g]
        p = n.ports[num]
        ep_lid[e] = p.lid
        lid_to_ep[p.lid] = e
        ep_lmc[e] = p.lmc
        ep_op_vls[e] = p.op_vls
        if p.remote and p.remote[0] in sw_of:
            ep_sw[e] = sw_of[p.remote[0]]
            ep_swport[e] = p.remote[1]
        elif p.remote in ep_of:
            ep_peer_ep[e] = ep_of[p.remote]
        table = ca_sl2vl(n, num)
        if table is not None:
            ep_sl2vl[e] = table
        elif has_sl2vl:
            raise _missing(f"CA {n.desc or hex(g)} port {num}", source)
    return FabricIndex(
        fabric=fabric,
        sw_guid=switches,
        ep=eps,
        ep_lid=ep_lid,
        ep_sw=ep_sw,
        ep_swport=ep_swport,
        ep_peer_ep=ep_peer_ep,
        P=P,
        lft=lft,
        peer_sw=peer_sw,
        peer_port=peer_port,
        peer_ep=peer_ep,
        sl2vl=sl2vl,
        ep_sl2vl=ep_sl2vl,
        op_vls=op_vls,
        ep_op_vls=ep_op_vls,
        has_sl2vl=has_sl2vl,
        lid_to_ep=lid_to_ep,
        warnings=warnings,
        ep_lmc=ep_lmc,
    )
