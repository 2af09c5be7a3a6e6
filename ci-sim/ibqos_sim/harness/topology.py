"""Fabric generator: dragonflies (and deliberate non-dragonflies) as ibsim net files.

Switch port numbering, the one place it is defined (the plugin must not rely on it; tests may):
  1 .. p                 hosts (terminal ports), host j on port j+1
  p+1 .. p+a-1           local ports, in the order of the peer's index within the group
                         (switch i reaches peer k, k != i, on port p+1 + (k if k < i else k-1))
  p+a .. p+a+h-1         global ports
Names: switches `sw-g<G>-s<I>`, CAs `ca-g<G>-s<I>-h<J>` (fat tree: `leaf<I>`, `spine<J>`,
`ca-l<I>-h<J>`). The first node written is the CA `ca-g0-s0-h0`, where ibsim attaches the SM.

Dragonfly+ (`dfplus`): per group leaves `sw-g<G>-l<I>` (hosts on ports 1 .. p, spine j on
port p+1+j) and spines `sw-g<G>-s<J>` (leaf i on port 1+i, global ports l+1 .. l+h); CAs
`ca-g<G>-l<I>-h<J>`, the first written `ca-g0-l0-h0`. Group G's n-th global slot is spine
n % s, port l+1 + n // s, dealt over group pairs as `dragonfly` deals them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ibqos.docfile import write_atomic
from ibqos.errors import InputError
from ibqos.fabric.model import Fabric, Node, Port
from ibqos.templating import render

# CAs -> (a, p, h, g), the seed-003 sizes plus the 42-CA fabric with multiple global links.
DRAGONFLY_SIZES: dict[int, tuple[int, int, int, int]] = {
    42: (3, 2, 3, 7),
    72: (4, 2, 2, 9),
    342: (6, 3, 3, 19),
    1056: (8, 4, 4, 33),
    2550: (10, 5, 5, 51),
}


@dataclass
class NodeSpec:
    name: str
    kind: str  # "Switch" or "Hca", as ibsim spells it
    nports: int
    group: int | None = None
    links: dict[int, tuple[str, int]] = field(default_factory=dict)
    role: str | None = None  # dragonfly+ switches: "leaf" or "spine" (roles.SWITCH_ROLES)


@dataclass
class Topology:
    name: str
    nodes: dict[str, NodeSpec] = field(default_factory=dict)
    params: dict = field(default_factory=dict)

    def add(self, node: NodeSpec) -> NodeSpec:
        self.nodes[node.name] = node
        return node

    def connect(self, a: str, pa: int, b: str, pb: int) -> None:
        na, nb = self.nodes[a], self.nodes[b]
        for n, p in ((na, pa), (nb, pb)):
            if p in n.links or not 1 <= p <= n.nports:
                raise ValueError(f"{n.name} port {p} is taken or out of range")
        na.links[pa] = (b, pb)
        nb.links[pb] = (a, pa)

    def disconnect(self, a: str, pa: int) -> None:
        b, pb = self.nodes[a].links.pop(pa)
        del self.nodes[b].links[pb]

    @property
    def switches(self) -> list[NodeSpec]:
        return [n for n in self.nodes.values() if n.kind == "Switch"]

    @property
    def cas(self) -> list[NodeSpec]:
        return [n for n in self.nodes.values() if n.kind == "Hca"]

    def links(self) -> list[tuple[str, int, str, int]]:
        out = []
        for n in self.nodes.values():
            for p, (peer, pp) in n.links.items():
                if (n.name, p) < (peer, pp):
                    out.append((n.name, p, peer, pp))
        return sorted(out)

    def to_fabric(self):
        """The generated wiring as an (unrouted) fabric model, GUIDs numbered in node order.
        Ground truth for tests; a real model comes from OpenSM's dumps or the live read-back."""
        ids = {name: i + 1 for i, name in enumerate(self.nodes)}
        fabric = Fabric(source=f"generated:{self.name}")
        for n in self.nodes.values():
            node = Node(guid=ids[n.name], kind="switch" if n.kind == "Switch" else "ca", desc=n.name, nports=n.nports)
            for port, (peer, pport) in n.links.items():
                node.ports[port] = Port(num=port, remote=(ids[peer], pport))
            fabric.nodes[node.guid] = node
        return fabric

    def write_net(self, path: str | Path) -> Path:
        path = Path(path)
        cas = self.cas
        order = cas[:1] + self.switches + cas[1:]
        write_atomic(path, render("ibsim.net.j2", topo=self, nodes=order))
        return path


def _sw(g: int, i: int) -> str:
    return f"sw-g{g}-s{i}"


def local_port(p: int, i: int, k: int) -> int:
    """Port on switch i of a group that leads to switch k of the same group."""
    return p + 1 + (k if k < i else k - 1)


def dragonfly(a: int, p: int, h: int, g: int | None = None) -> Topology:
    """Fully-connected dragonfly. With g < a*h+1 the global ports are dealt round-robin over
    group pairs, so some pairs get several global links (and a port may stay unused)."""
    if g is None:
        g = a * h + 1
    if a < 1 or p < 0 or h < 1 or not 2 <= g <= a * h + 1:
        raise ValueError(f"invalid dragonfly a={a} p={p} h={h} g={g} (need 2 <= g <= a*h+1)")
    if p + (a - 1) + h > 254:  # before building a*g switches of a size no switch has
        raise ValueError(f"a switch has at most 254 ports, not p + a-1 + h = {p + a - 1 + h}")
    if g * a * (1 + p) > 0xBFFF:  # every switch and CA needs a unicast LID
        raise ValueError(f"{g * a * (1 + p)} switches and CAs, more than the {0xBFFF} unicast LIDs")
    t = Topology(name=f"dragonfly-a{a}-p{p}-h{h}-g{g}", params=dict(a=a, p=p, h=h, g=g))
    nports = p + (a - 1) + h
    for G in range(g):
        for i in range(a):
            t.add(NodeSpec(_sw(G, i), "Switch", nports, group=G))
            for j in range(p):
                ca = t.add(NodeSpec(f"ca-g{G}-s{i}-h{j}", "Hca", 1, group=G))
                t.connect(ca.name, 1, _sw(G, i), j + 1)
        for i in range(a):
            for k in range(i + 1, a):
                t.connect(_sw(G, i), local_port(p, i, k), _sw(G, k), local_port(p, k, i))
    _deal_global_links(t, a, p, h, g)
    return t


def _deal_global_links(t: Topology, a: int, p: int, h: int, g: int, slot=None) -> None:
    # Group G's n-th global port is switch n % a, slot n // a: consecutive links of a group
    # land on different switches, which spreads the extra links of the round-robin.
    # slot(G, n) -> (switch, port) overrides where the n-th global port of group G sits.
    used = [0] * g

    def next_port(G: int) -> tuple[str, int]:
        n = used[G]
        used[G] += 1
        return slot(G, n) if slot else (_sw(G, n % a), p + a + n // a)

    progress = True
    while progress:
        progress = False
        for d in range(1, g // 2 + 1):
            for G in range(g):
                H = (G + d) % g
                if 2 * d == g and H < G:
                    continue  # the opposite pair at distance g/2, once
                if used[G] < a * h and used[H] < a * h:
                    (sa, pa), (sb, pb) = next_port(G), next_port(H)
                    t.connect(sa, pa, sb, pb)
                    progress = True


def dfplus(leaves: int, spines: int, p: int, h: int, g: int | None = None, hosts: list[int] | None = None) -> Topology:
    """Dragonfly+ (Shpiner et al., HiPINEB 2017): each group a two-level fat tree, every leaf
    linked to every spine, hosts on the leaves, h global ports per spine. g defaults to
    spines*h+1 (one link per group pair); fewer groups deal several links to some pairs.
    hosts: one count per leaf (group by group) instead of p everywhere."""
    if g is None:
        g = spines * h + 1
    if leaves < 1 or spines < 1 or p < 0 or h < 1 or not 2 <= g <= spines * h + 1:
        raise ValueError(
            f"invalid dragonfly+ l={leaves} s={spines} p={p} h={h} g={g} (need l, s, h >= 1, 2 <= g <= s*h+1)"
        )
    nhosts = hosts if hosts is not None else [p] * (leaves * g)
    if len(nhosts) != leaves * g or min(nhosts) < 0:
        raise ValueError(f"hosts needs one count >= 0 per leaf ({leaves * g})")
    pmax = max(nhosts)
    if pmax + spines > 254 or leaves + h > 254:
        raise ValueError(f"a switch has at most 254 ports, not {max(pmax + spines, leaves + h)}")
    if g * (leaves + spines) + sum(nhosts) > 0xBFFF:
        raise ValueError("more switches and CAs than unicast LIDs")
    t = Topology(name=f"dfplus-l{leaves}-s{spines}-p{p}-h{h}-g{g}", params=dict(l=leaves, s=spines, p=p, h=h, g=g))
    first = t.add(NodeSpec("ca-g0-l0-h0", "Hca", 1, group=0)) if nhosts[0] else None
    for G in range(g):
        for j in range(spines):
            t.add(NodeSpec(f"sw-g{G}-s{j}", "Switch", leaves + h, group=G, role="spine"))
        for i in range(leaves):
            leaf = t.add(NodeSpec(f"sw-g{G}-l{i}", "Switch", pmax + spines, group=G, role="leaf"))
            for k in range(nhosts[G * leaves + i]):
                name = f"ca-g{G}-l{i}-h{k}"
                ca = first if first and name == first.name else t.add(NodeSpec(name, "Hca", 1, group=G))
                t.connect(ca.name, 1, leaf.name, k + 1)
            for j in range(spines):
                t.connect(leaf.name, pmax + 1 + j, f"sw-g{G}-s{j}", 1 + i)
    _deal_global_links(t, spines, 0, h, g, slot=lambda G, n: (f"sw-g{G}-s{n % spines}", leaves + 1 + n // spines))
    if first is None:  # ibsim attaches the SM to the first node written: make that a CA
        t.nodes = dict(sorted(t.nodes.items(), key=lambda kv: kv[1].kind != "Hca"))
    return t


def dragonfly_missing_local_link(
    a: int, p: int, h: int, g: int | None = None, group: int = 0, i: int = 0, k: int = 1
) -> Topology:
    t = dragonfly(a, p, h, g)
    t.disconnect(_sw(group, i), local_port(p, i, k))
    t.name += f"-nolocal-g{group}-s{i}-s{k}"
    return t


def dragonfly_unconnected_pair(a: int, p: int, h: int, ga: int = 0, gb: int = 1) -> Topology:
    """A full dragonfly (g = a*h+1, one link per pair) minus the only link of groups ga-gb."""
    t = dragonfly(a, p, h)
    for sa, pa, sb, _ in t.links():
        na, nb = t.nodes[sa], t.nodes[sb]
        if na.kind == nb.kind == "Switch" and {na.group, nb.group} == {ga, gb}:
            t.disconnect(sa, pa)
            break
    t.name += f"-nopair-g{ga}-g{gb}"
    return t


def fat_tree(leaves: int = 4, spines: int = 2, hosts: int = 4) -> Topology:
    """Two-level fat tree: every leaf linked once to every spine."""
    if leaves < 1 or hosts < 1 or spines < 0:
        raise ValueError(
            f"need leaves >= 1, hosts >= 1, spines >= 0 (got leaves={leaves}, spines={spines}, hosts={hosts})"
        )
    if leaves > 1 and spines == 0:
        raise ValueError(f"{leaves} leaves without a spine are {leaves} separate fabrics")
    if hosts + spines > 254 or leaves > 254:
        raise ValueError("a switch has at most 254 ports")
    t = Topology(name=f"fattree-l{leaves}-s{spines}-h{hosts}", params=dict(leaves=leaves, spines=spines, hosts=hosts))
    for s in range(spines):
        t.add(NodeSpec(f"spine{s}", "Switch", leaves))
    for lf in range(leaves):
        t.add(NodeSpec(f"leaf{lf}", "Switch", hosts + spines))
        for j in range(hosts):
            t.add(NodeSpec(f"ca-l{lf}-h{j}", "Hca", 1))
            t.connect(f"ca-l{lf}-h{j}", 1, f"leaf{lf}", j + 1)
        for s in range(spines):
            t.connect(f"leaf{lf}", hosts + 1 + s, f"spine{s}", lf + 1)
    # ibsim attaches the SM to the first node written: make that a CA.
    t.nodes = dict(sorted(t.nodes.items(), key=lambda kv: kv[1].kind != "Hca"))
    return t


_SPEC = re.compile(r"^(?P<kind>dragonfly|df|fattree|dfplus)(?::(?P<args>.*))?$")
# kind -> (required, optional) parameters of the generator
_SPEC_PARAMS = {
    "dragonfly": (("a", "p", "h"), ("g",)),
    "fattree": ((), ("leaves", "spines", "hosts")),
    "dfplus": (("l", "s", "p", "h"), ("g",)),
}


def from_spec(spec: str) -> Topology:
    """`dragonfly:a=4,p=2,h=2[,g=9]`, `df72` (a seed size by CA count), `fattree:leaves=4,...`,
    `dfplus:l=4,s=4,p=4,h=2[,g=9]` (dragonfly+: leaves, spines, hosts per leaf, globals per
    spine per group)."""
    m = re.fullmatch(r"df(\d+)", spec)
    if m:
        n = int(m.group(1))
        if n not in DRAGONFLY_SIZES:
            raise InputError(f"no preset dragonfly with {n} CAs (have {sorted(DRAGONFLY_SIZES)})", field="--topology")
        return dragonfly(*DRAGONFLY_SIZES[n])
    m = _SPEC.match(spec)
    if not m:
        raise InputError(
            f"unknown topology {spec!r} (want dragonfly:a=..,p=..,h=..[,g=..], dfN, dfplus:l=..,s=..,p=..,h=..[,g=..]"
            " or fattree:...)",
            field="--topology",
        )
    kind = {"fattree": "fattree", "dfplus": "dfplus"}.get(m.group("kind"), "dragonfly")
    required, optional = _SPEC_PARAMS[kind]
    kv = {}
    for part in filter(None, (m.group("args") or "").split(",")):
        k, _, v = part.partition("=")
        k = k.strip()
        if k not in required + optional:
            raise InputError(
                f"{spec!r}: unknown parameter {k!r} ({kind} takes {', '.join(required + optional)})", field="--topology"
            )
        # ASCII: str.isdigit also takes '²', which int() refuses (an internal error, exit 70)
        if not re.fullmatch(r"\s*[0-9]+\s*", v):
            raise InputError(f"{spec!r}: {k} must be a whole number, not {v!r}", field="--topology")
        if k in kv:
            raise InputError(f"{spec!r}: {k} given twice", field="--topology")
        kv[k] = int(v)
    if kind in ("dragonfly", "dfplus") and kv.get("p") == 0:
        raise InputError(f"{spec!r}: p=0 gives a dragonfly without CAs: nothing to route", field="--topology")
    missing = [k for k in required if k not in kv]
    if missing:
        raise InputError(
            f"{spec!r}: give {', '.join(f'{k}=' for k in missing)} ({kind}:{','.join(f'{k}=N' for k in required)})",
            field="--topology",
        )
    try:
        if kind == "dfplus":
            return dfplus(kv["l"], kv["s"], kv["p"], kv["h"], kv.get("g"))
        return fat_tree(**kv) if kind == "fattree" else dragonfly(**kv)
    except ValueError as e:
        raise InputError(f"{spec!r}: {e}", field="--topology") from e
