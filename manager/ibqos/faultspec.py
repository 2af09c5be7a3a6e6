"""The fault an admin names: one link or one switch taken down, as `ibqos dryrun --fault` reads it.

    link:sw-g0-s0[7]          the link on port 7 of switch sw-g0-s0 (either end may be named)
    link:ca-g0-s1-h0[1]       a host's link (a terminal link)
    switch:sw-g3-s1           the whole switch: every link of it, its hosts cut off
    switch:0x0000000000200004 a node GUID instead of the name (node description)

`parse_fault` checks the spelling alone (before anything starts); `resolve` checks it against
a routed fabric model (the name exists, the port is linked) and says what goes down.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from .errors import InputError
from .fabric.check import MAX_PORTS
from .fabric.groups import NotADragonfly, dragonfly_groups
from .fabric.model import Fabric, Node

PortEnd = tuple[int, int]  # (node GUID, port number)

FIELD = "--fault"
SYNTAX = (
    "want link:NODE[PORT] or switch:NODE, NODE a node name such as sw-g0-s0 or 'node01 HCA-1 [mlx5_0]' (its "
    "description) or a node GUID such as 0x0000000000200004"
)
# NODE is a node description as ibnetdiscover's are, spaces and brackets in it ('node01 HCA-1
# [mlx5_0]'): a link's port is the [digits] that end the text
_RX = re.compile(r"^(?P<kind>link|switch):(?P<node>.+?)(?:\[(?P<port>\d+)\])?$")


@dataclass(frozen=True)
class FaultSpec:
    kind: str  # "link" or "switch"
    node: str  # as typed: a node description or 0x<GUID>
    port: int | None
    text: str


@dataclass(frozen=True)
class ResolvedFault:
    """The one fault type: what goes down. `resolve` makes one from a spelling and a routed
    fabric (`ibqos dryrun --fault`); ibqos_sim.campaign from a generated topology."""

    spec: FaultSpec
    node: str  # node description (Harness.unlink finds the net file's node id for it)
    port: int | None  # None: the whole switch
    peer: tuple[str, int] | None  # the other end of a link
    kind: str  # "terminal link", "local link", "global link", "switch link" or "switch"
    lost_cas: tuple[str, ...]  # CAs and routers left without a link (a dual-rail HCA keeps its other)
    # or, resolved with the SM's node, without a path to it; and the switches so cut off
    cut_switches: tuple[str, ...] = ()
    guid: int | None = None  # the node's, where resolved on a fabric model (one node, two spellings)

    def __str__(self) -> str:
        """`switch sw-g3-s1`, `global link sw-g0-s1[7]-sw-g3-s0[6]`."""
        if self.port is None:
            return f"switch {self.node}"
        assert self.peer is not None  # a link has two ends
        return f"{self.kind} {self.node}[{self.port}]-{self.peer[0]}[{self.peer[1]}]"

    @property
    def short_kind(self) -> str:
        """terminal, local, global or switch: the fault campaign's kinds (a dragonfly's)."""
        return self.kind.removesuffix(" link")

    def describe(self) -> str:
        if self.port is None or self.peer is None:  # a link fault has both
            return f"{self} down ({len(self.lost_cas)} hosts cut off)"
        if len(self.lost_cas) > 3:
            return f"{self} down ({len(self.lost_cas)} hosts cut off)"
        return f"{self} down" + (f" ({', '.join(self.lost_cas)} cut off)" if self.lost_cas else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "fault": self.spec.text,
            "kind": self.kind,
            "node": self.node,
            "port": self.port,
            "peer": list(self.peer) if self.peer else None,
            "lost_cas": list(self.lost_cas),
            "description": self.describe(),
        }


def parse_fault(text: str) -> FaultSpec:
    m = _RX.match(text.strip())
    if not m:
        raise InputError(f"{text!r}: {SYNTAX}", field=FIELD)
    kind, node, port = m["kind"], m["node"], m["port"]
    if kind == "link" and port is None:
        raise InputError(f"{text!r}: a link needs its port, e.g. link:{node}[1]", field=FIELD)
    if kind == "switch" and port is not None:
        raise InputError(
            f"{text!r}: a switch fault takes no port (for one of its links: link:{node}[{port}])", field=FIELD
        )
    if port is not None and not 1 <= int(port) <= MAX_PORTS:
        raise InputError(f"{text!r}: port {port} out of range 1..254", field=FIELD)
    return FaultSpec(kind, node, int(port) if port else None, text.strip())


def _find(fabric: Fabric, spec: FaultSpec) -> Node:
    if re.fullmatch(r"0x[0-9a-fA-F]{1,16}", spec.node):
        guid = int(spec.node, 16)
        node = fabric.nodes.get(guid) or next(
            (n for n in fabric.nodes.values() if any(p.guid == guid for p in n.ports.values())), None
        )
        if node is None:
            raise InputError(f"{spec.text!r}: no node or port GUID {spec.node} on this fabric", field=FIELD)
        return node
    named = [n for n in fabric.nodes.values() if n.desc == spec.node]
    if not named:
        raise InputError(f"{spec.text!r}: no node named {spec.node!r} on this fabric", field=FIELD)
    if len(named) > 1:
        raise InputError(
            f"{spec.text!r}: {len(named)} nodes are named {spec.node!r}; give the node "
            f"GUID ({', '.join(f'0x{n.guid:016x}' for n in named[:3])})",
            field=FIELD,
        )
    return named[0]


def _switch_link_kind(fabric: Fabric, a: Node, b: Node) -> str:
    """local / global on a dragonfly (groups from the checker's own discovery), else plain."""
    try:
        groups = dragonfly_groups(fabric)
    except NotADragonfly:
        return "switch link"
    return "local link" if groups[a.guid] == groups[b.guid] else "global link"


def _cut_off(fabric: Fabric, nodes: set[int], down: Callable[[PortEnd, PortEnd], bool]) -> tuple[str, ...]:
    """The CAs and routers among `nodes` that the fault leaves without a link (a dual-rail
    HCA keeps its other rail): `down(end, far)` says whether the cable between these two
    (node GUID, port) ends goes down."""
    out = []
    for guid in nodes:
        n = fabric.nodes[guid]
        cables = [((guid, p.num), p.remote) for p in n.ports.values() if p.remote]
        if n.kind != "switch" and cables and all(down(a, b) for a, b in cables):
            out.append(n.desc)
    return tuple(sorted(out))


def _down(node: Node, port: int | None) -> Callable[[PortEnd, PortEnd], bool]:
    """Whether the fault on `node` (port None: the whole switch) takes down the cable between
    two (node GUID, port) ends."""
    if port is None:
        return lambda end, far: node.guid in (end[0], far[0])
    link = {(node.guid, port), node.ports[port].remote}
    return lambda end, far: end in link or far in link


def _unreached(fabric: Fabric, start: int, down: Callable[[PortEnd, PortEnd], bool]) -> set[int]:
    """The nodes with no path from `start` over the cables left up. A path goes on through
    switches only: a dual-rail HCA on two leaves joins them for no one (OpenSM's directed
    routes end at a CA), so two trunks down cut the second leaf off though the HCA cables it."""
    seen, todo = {start}, [start]
    while todo:
        guid = todo.pop()
        if guid != start and fabric.nodes[guid].kind != "switch":
            continue
        for p in fabric.nodes[guid].ports.values():
            if p.remote and p.remote[0] not in seen and not down((guid, p.num), p.remote):
                seen.add(p.remote[0])
                todo.append(p.remote[0])
    return fabric.nodes.keys() - seen


def _gone_from_sm(
    fabric: Fabric, sm_node: str, down: Callable[[PortEnd, PortEnd], bool], text: str, cuts: str
) -> list[Node] | None:
    """The nodes `down` leaves without a path to the SM's node, or None when others share its
    description (no telling which node runs OpenSM). Faults that leave the SM the smaller part
    (`text` names them, `cuts` says 'this fault cuts') are refused: judging what the SM keeps
    would pass on a rump."""
    sm = [g for g, n in fabric.nodes.items() if n.desc == sm_node]
    if len(sm) != 1:
        return None
    gone = [fabric.nodes[g] for g in _unreached(fabric, sm[0], down)]
    lost = sum(n.kind != "switch" for n in gone)
    kept = sum(n.kind != "switch" for n in fabric.nodes.values()) - lost
    if kept < lost:
        raise InputError(
            f"{text}: OpenSM runs on {sm_node}, which {cuts} off the fabric (it keeps a path to {kept} hosts of "
            f"{kept + lost}); name another link or switch",
            field=FIELD,
        )
    return gone


def _cut_from_sm(
    res: ResolvedFault, fabric: Fabric, sm_node: str, down: Callable[[PortEnd, PortEnd], bool]
) -> ResolvedFault:
    """`res` with what has no path left to the SM's node: a switch whose links were a group's
    only way to the rest cuts the group off, hosts and switches, though each keeps its links.
    Before, 'switch sw-g1-s3 down (0 hosts cut off)', and the dry run failed 'every node of
    the net file discovered: 9 not reached by the SM'."""
    gone = _gone_from_sm(fabric, sm_node, down, repr(res.spec.text), "this fault cuts")
    if gone is None:
        return res
    hosts = {n.desc for n in gone if n.kind != "switch"} | set(res.lost_cas)
    switches = {n.desc for n in gone if n.kind == "switch"} - {res.node if res.port is None else ""}
    return replace(res, lost_cas=tuple(sorted(hosts)), cut_switches=tuple(sorted(switches)))


def resolve(spec: FaultSpec, fabric: Fabric, *, sm_node: str | None = None) -> ResolvedFault:
    """What the fault takes down on `fabric`. `sm_node` is the CA OpenSM runs on: a fault that
    cuts it off is refused (OpenSM could not re-sweep what it cannot reach)."""
    node = _find(fabric, spec)
    if spec.kind == "switch":
        if node.kind != "switch":
            raise InputError(
                f"{spec.text!r}: {node.desc} is a {node.kind.upper()}, not a switch "
                f"(for its link: link:{node.desc}[1])",
                field=FIELD,
            )
        peers = {fabric.nodes[p.remote[0]].guid for p in node.ports.values() if p.remote}
        down = _down(node, None)
        res = ResolvedFault(spec, node.desc, None, None, "switch", _cut_off(fabric, peers, down), guid=node.guid)
    else:
        if spec.port is None:  # parse_fault gives every link its port
            raise InputError(f"{spec.text!r}: a link is link:NODE[PORT]", field=FIELD)
        port = node.ports.get(spec.port)
        if spec.port > node.nports:
            raise InputError(
                f"{spec.text!r}: {node.desc} has no port {spec.port} (ports 1..{node.nports})", field=FIELD
            )
        if port is None or port.remote is None:
            raise InputError(f"{spec.text!r}: port {spec.port} of {node.desc} has no link", field=FIELD)
        peer = fabric.nodes[port.remote[0]]
        ends = (node, peer)
        kind = "terminal link" if any(n.kind != "switch" for n in ends) else _switch_link_kind(fabric, node, peer)
        down = _down(node, spec.port)
        res = ResolvedFault(
            spec,
            node.desc,
            spec.port,
            (peer.desc, port.remote[1]),
            kind,
            _cut_off(fabric, {n.guid for n in ends}, down),
            guid=node.guid,
        )
    # the SM's node is a CA, or a switch (port 0) when a net file lists a switch first, as
    # ibnetdiscover does
    if sm_node is not None and (sm_node in res.lost_cas or (res.kind == "switch" and res.node == sm_node)):
        raise InputError(
            f"{spec.text!r}: OpenSM runs on {sm_node}, which this fault cuts off the "
            "fabric; name another link or switch",
            field=FIELD,
        )
    return res if sm_node is None else _cut_from_sm(res, fabric, sm_node, down)


def _node_id(f: ResolvedFault) -> str | int:
    """The node's GUID where resolved on a fabric: switch:NAME and switch:0xGUID are one switch
    (both went down, the dry run passed with the switch listed twice); else as typed, a GUID
    naming the node even where its description is shared."""
    if f.guid is not None:
        return f.guid
    return f.spec.node.lower() if f.spec.node.lower().startswith("0x") else f.node


def check_disjoint(faults: list[ResolvedFault]) -> None:
    """Each fault takes down something no earlier one did: one link named twice (by either
    end), a link of a switch also taken down, a switch twice. ibsim refuses to unlink a port
    twice, half-way through the faults."""
    for i, f in enumerate(faults):
        for e in faults[:i]:
            if f.port is not None and e.port is not None:
                both = f if {(f.node, f.port), f.peer} == {(e.node, e.port), e.peer} else None
            elif f.port is None and e.port is None:
                both = f if _node_id(f) == _node_id(e) else None
            else:
                switch, link = (f, e) if f.port is None else (e, f)
                both = link if switch.node in (link.node, link.peer[0] if link.peer else None) else None
            if both is not None:
                raise InputError(
                    f"{f.spec.text!r}: {e.spec.text!r} takes {both} down too; name each link or switch once",
                    field=FIELD,
                )


@dataclass(frozen=True)
class CutTogether:
    """What several faults cut off from the SM between them and none of them alone: each of a
    group's two spines leaves it the other, both down leave it none."""

    faults: tuple[str, ...]  # as typed
    lost_cas: tuple[str, ...]
    cut_switches: tuple[str, ...]

    def describe(self) -> str:
        hosts = f"{len(self.lost_cas)} hosts" if len(self.lost_cas) > 3 else ", ".join(self.lost_cas)
        n = len(self.cut_switches)
        switches = f"{n} switch{'es' if n > 1 else ''}" if n else ""
        return f"{' + '.join(self.faults)} together cut off " + " and ".join(filter(None, (hosts, switches)))

    def to_json(self) -> dict[str, Any]:
        return {
            "faults": list(self.faults),
            "lost_cas": list(self.lost_cas),
            "cut_switches": list(self.cut_switches),
            "description": self.describe(),
        }


def cut_together(faults: list[ResolvedFault], fabric: Fabric, sm_node: str) -> CutTogether | None:
    """What `faults`, all down, leave without a path to the SM's node that no one of them
    does alone (each resolved with `sm_node`), or None. Before, two spines of a dragonfly+
    group down each said '0 hosts cut off', and the dry run failed 'every node of the net
    file discovered: 6 not reached by the SM' on the group they had cut off between them."""
    if len(faults) < 2:
        return None
    downs = [_down(_find(fabric, f.spec), f.port) for f in faults]

    def down(end: PortEnd, far: PortEnd) -> bool:
        return any(d(end, far) for d in downs)

    text = ", ".join(repr(f.spec.text) for f in faults)
    gone = _gone_from_sm(fabric, sm_node, down, text, "these faults together cut")
    alone = {d for f in faults for d in (*f.lost_cas, *f.cut_switches, *([f.node] if f.port is None else []))}
    hosts = sorted(n.desc for n in gone or () if n.kind != "switch" and n.desc not in alone)
    switches = sorted(n.desc for n in gone or () if n.kind == "switch" and n.desc not in alone)
    if not hosts and not switches:
        return None
    return CutTogether(tuple(f.spec.text for f in faults), tuple(hosts), tuple(switches))
