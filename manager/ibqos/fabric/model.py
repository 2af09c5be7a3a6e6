"""Fabric model: nodes, ports, links, LIDs, LFTs, per-(in,out) SL2VL, VLArb, operational VLs.

Conventions (the same wherever the model is built: dumps, live read-back, JSON):
- GUIDs are ints. Nodes are keyed by node GUID; ports by number (switch port 0 included).
- A link is stored on both ends as `Port.remote = (peer node GUID, peer port number)`.
- Ports present: switch port 0 and every port with a link. Switch external ports carry
  guid 0 and lid 0; port 0 carries the switch's port GUID, LID and LMC.
- `Node.lft[lid]` is the output port for destination LID `lid`; NO_ROUTE (255) means
  unrouted. The list is as long as the highest LID in the fabric + 1 (see `pad_lfts`).
- `Node.sl2vl[(in_port, out_port)]` is a tuple of 16 VLs indexed by SL. On switches
  the key is the (input, output) port pair as in the SLtoVLMappingTable attribute.
  On CAs the input port is meaningless; the key is (0, port number).
- `Port.op_vls` and `Port.vl_cap` count data VLs (1, 2, 4, 8 or 15), not the IB encoding.
- `Port.vlarb` holds the tables exactly as programmed, including weight-0 entries,
  `high_cap`/`low_cap` entries long. It is None where nothing was read (dumps carry no
  VLArb, and ports with a single data VL have no VLArb).
- A port attribute a source does not carry is 0 or "" (dumps carry no vl_cap, op_vls, mtu).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

SCHEMA = "ibqos.fabric/1"
NO_ROUTE = 255

NodeKind = Literal["switch", "ca", "router"]


@dataclass
class VLArb:
    high: list[tuple[int, int]]
    low: list[tuple[int, int]]
    high_limit: int
    high_cap: int
    low_cap: int


@dataclass
class Port:
    num: int
    guid: int = 0
    lid: int = 0  # CA ports and switch port 0; 0 on switch external ports
    lmc: int = 0
    remote: tuple[int, int] | None = None
    width: str = ""  # "4X"
    speed: str = ""  # "2.5" Gb/s per lane, as PortInfo reports it
    vl_cap: int = 0
    op_vls: int = 0
    mtu: int = 0
    vlarb: VLArb | None = None


@dataclass
class Node:
    guid: int
    kind: NodeKind
    desc: str
    nports: int
    ports: dict[int, Port] = field(default_factory=dict)
    lft: list[int] = field(default_factory=list)
    sl2vl: dict[tuple[int, int], tuple[int, ...]] = field(default_factory=dict)

    @property
    def lid(self) -> int:
        """Base LID: port 0 on switches, the first port with a LID on CAs."""
        for num in sorted(self.ports):
            if self.ports[num].lid:
                return self.ports[num].lid
        return 0

    def route(self, dlid: int) -> int:
        return self.lft[dlid] if dlid < len(self.lft) else NO_ROUTE


@dataclass
class Fabric:
    nodes: dict[int, Node] = field(default_factory=dict)
    source: str = ""  # "dumps:<dir>" or "live:<how>"
    # The SA's SL for every CA pair, (source LID, destination LID) -> SL, for engines that give
    # each path its own SL (lash, dfsssp); None when not read (every path uses its class's SL).
    path_sls: dict[tuple[int, int], int] | None = None

    # ---- queries -------------------------------------------------------
    def switches(self) -> Iterator[Node]:
        return (n for n in self.nodes.values() if n.kind == "switch")

    def cas(self) -> Iterator[Node]:
        return (n for n in self.nodes.values() if n.kind == "ca")

    def links(self) -> Iterator[tuple[int, int, int, int]]:
        """Every link once, as (guid_a, port_a, guid_b, port_b) with (guid_a, port_a) < (guid_b, port_b)."""
        for n in self.nodes.values():
            for p in n.ports.values():
                if p.remote and (n.guid, p.num) < p.remote:
                    yield (n.guid, p.num, *p.remote)

    def lid_map(self) -> dict[int, tuple[int, int]]:
        """LID → (node GUID, port number); switches answer on port 0."""
        out: dict[int, tuple[int, int]] = {}
        for n in self.nodes.values():
            for p in n.ports.values():
                if p.lid:
                    for k in range(1 << p.lmc):
                        out[p.lid + k] = (n.guid, p.num)
        return out

    def peer(self, guid: int, port: int) -> tuple[int, int] | None:
        return self.nodes[guid].ports[port].remote

    def pad_lfts(self) -> None:
        """Give every switch LFT the same length: one past the highest LID assigned or routed.

        Switches report tables of different lengths (LinearFDBTop, dump headers); entries past
        the end mean NO_ROUTE either way, so loaders call this to make models comparable.
        """
        top = max(self.lid_map(), default=0)
        for n in self.switches():
            routed = [i for i, p in enumerate(n.lft) if p != NO_ROUTE]
            top = max(top, routed[-1] if routed else 0)
        for n in self.switches():
            n.lft = (n.lft + [NO_ROUTE] * (top + 1 - len(n.lft)))[: top + 1]

    # ---- JSON ----------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "schema": SCHEMA,
            "source": self.source,
            "nodes": [_node_to_json(n) for n in sorted(self.nodes.values(), key=lambda n: n.guid)],
        }
        if self.path_sls is not None:
            doc["path_sls"] = [[s, d, sl] for (s, d), sl in sorted(self.path_sls.items())]
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Fabric:
        if doc.get("schema") != SCHEMA:
            raise ValueError(f"not an ibqos fabric model (schema {doc.get('schema')!r}, want {SCHEMA!r})")
        nodes = {}
        for nd in doc["nodes"]:
            n = _node_from_json(nd)
            nodes[n.guid] = n
        psl = doc.get("path_sls")
        return cls(nodes=nodes, source=doc.get("source", ""), path_sls=None if psl is None else _path_sls(psl))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), separators=(",", ":")) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Fabric:
        from ..docfile import read_json_text
        from ..errors import InputError
        from .check import check_fabric_doc

        # read as every input is (a FIFO or a device refused, UTF-8, no NaN), then checked
        # field by field so that from_json only builds
        doc, text = read_json_text(path)
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            got = doc.get("schema") if isinstance(doc, dict) else None
            raise InputError(f"not an ibqos fabric model (schema {got!r}, want {SCHEMA!r})", file=path, field="schema")
        check_fabric_doc(doc, path, text)
        try:
            return cls.from_json(doc)
        except ValueError as e:  # path_sls
            raise InputError(str(e), file=path) from e


def _path_sls(rows: object) -> dict[tuple[int, int], int]:
    """`[[slid, dlid, sl], …]` -> {(slid, dlid): sl}; a malformed row is a ValueError naming it."""
    if not isinstance(rows, list):
        raise ValueError(f"path_sls: want a list of [source LID, destination LID, SL], got {type(rows).__name__}")
    out: dict[tuple[int, int], int] = {}
    row: object
    for k, row in enumerate(rows):
        if not (isinstance(row, list) and len(row) == 3 and all(type(x) is int for x in row)):
            raise ValueError(f"path_sls[{k}]: want [source LID, destination LID, SL], got {row!r}")
        s, d, sl = row
        if not (0 < s < 0xC000 and 0 < d < 0xC000):
            raise ValueError(f"path_sls[{k}]: LIDs {s}, {d} are not unicast LIDs")
        if not 0 <= sl <= 15:
            raise ValueError(f"path_sls[{k}]: SL {sl} out of range 0..15")
        out[(s, d)] = sl
    return out


def _hex(g: int) -> str:
    return f"0x{g:016x}"


def _sl2vl_str(vls: tuple[int, ...]) -> str:
    return "".join(f"{v:x}" for v in vls)


def _node_to_json(n: Node) -> dict[str, Any]:
    return {
        "guid": _hex(n.guid),
        "kind": n.kind,
        "desc": n.desc,
        "nports": n.nports,
        "ports": [_port_to_json(p) for _, p in sorted(n.ports.items())],
        "lft": n.lft,
        "sl2vl": [[i, o, _sl2vl_str(v)] for (i, o), v in sorted(n.sl2vl.items())],
    }


def _port_to_json(p: Port) -> dict[str, Any]:
    d = {
        "num": p.num,
        "guid": _hex(p.guid),
        "lid": p.lid,
        "lmc": p.lmc,
        "remote": [_hex(p.remote[0]), p.remote[1]] if p.remote else None,
        "width": p.width,
        "speed": p.speed,
        "vl_cap": p.vl_cap,
        "op_vls": p.op_vls,
        "mtu": p.mtu,
        "vlarb": None,
    }
    if p.vlarb:
        a = p.vlarb
        d["vlarb"] = {
            "high": [list(e) for e in a.high],
            "low": [list(e) for e in a.low],
            "high_limit": a.high_limit,
            "high_cap": a.high_cap,
            "low_cap": a.low_cap,
        }
    return d


def _node_from_json(d: dict[str, Any]) -> Node:
    ports = {}
    for pd in d["ports"]:
        va = pd.get("vlarb")
        ports[pd["num"]] = Port(
            num=pd["num"],
            guid=int(pd["guid"], 16),
            lid=pd["lid"],
            lmc=pd.get("lmc", 0),
            remote=(int(pd["remote"][0], 16), pd["remote"][1]) if pd.get("remote") else None,
            width=pd.get("width", ""),
            speed=pd.get("speed", ""),
            vl_cap=pd.get("vl_cap", 0),
            op_vls=pd.get("op_vls", 0),
            mtu=pd.get("mtu", 0),
            vlarb=VLArb(
                [tuple(e) for e in va["high"]],
                [tuple(e) for e in va["low"]],
                va["high_limit"],
                va["high_cap"],
                va["low_cap"],
            )
            if va
            else None,
        )
    return Node(
        guid=int(d["guid"], 16),
        kind=d["kind"],
        desc=d["desc"],
        nports=d["nports"],
        ports=ports,
        lft=list(d.get("lft", [])),
        sl2vl={(i, o): tuple(int(c, 16) for c in s) for i, o, s in d.get("sl2vl", [])},
    )
