"""Small fabric models built in Python for the verifier's tests (no ibsim needed)."""

from __future__ import annotations

from collections import deque

from ibqos.fabric.model import NO_ROUTE, Fabric, Node, Port


class Synth:
    """Build a Fabric: switches, 1-port CAs, links, shortest-path LFTs, SL2VL rules."""

    def __init__(self) -> None:
        self.f = Fabric(source="synthetic")
        self._guid = 0x1000
        self._lid = 1
        self.by_name: dict[str, int] = {}

    def _new(self, name: str, kind: str, nports: int) -> Node:
        self._guid += 1
        n = Node(guid=self._guid, kind=kind, desc=name, nports=nports)
        self.f.nodes[n.guid] = n
        self.by_name[name] = n.guid
        return n

    def node(self, name: str) -> Node:
        return self.f.nodes[self.by_name[name]]

    def switch(self, name: str, nports: int = 8) -> Node:
        n = self._new(name, "switch", nports)
        n.ports[0] = Port(num=0, guid=n.guid, lid=self._take_lid())
        for p in range(1, nports + 1):
            n.ports[p] = Port(num=p)
        return n

    def ca(self, name: str, sw: str, port: int) -> Node:
        n = self._new(name, "ca", 1)
        n.ports[1] = Port(num=1, guid=n.guid + 0x100000, lid=self._take_lid())
        self.link(name, 1, sw, port)
        return n

    def _take_lid(self) -> int:
        self._lid += 1
        return self._lid - 1

    def link(self, a: str, pa: int, b: str, pb: int) -> None:
        na, nb = self.node(a), self.node(b)
        na.ports[pa].remote = (nb.guid, pb)
        nb.ports[pb].remote = (na.guid, pa)

    def route_shortest(self) -> Synth:
        """BFS shortest paths to every CA LID; ties go to the lowest port number."""
        lids = {p.lid: (n.guid, p.num) for n in self.f.cas() for p in n.ports.values() if p.lid}
        top = max(p.lid for n in self.f.nodes.values() for p in n.ports.values())
        for sw in self.f.switches():
            sw.lft = [NO_ROUTE] * (top + 1)
        for lid, (guid, _) in lids.items():
            ca = self.f.nodes[guid]
            first_sw, first_port = ca.ports[1].remote
            dist = {first_sw: 0}
            self.f.nodes[first_sw].lft[lid] = first_port
            q = deque([first_sw])
            while q:
                g = q.popleft()
                for p in sorted(self.f.nodes[g].ports.values(), key=lambda p: p.num):
                    if p.num == 0 or p.remote is None:
                        continue
                    r, rp = p.remote
                    if self.f.nodes[r].kind == "switch" and r not in dist:
                        dist[r] = dist[g] + 1
                        self.f.nodes[r].lft[lid] = rp
                        q.append(r)
        return self

    def set_route(self, sw: str, dst_ca: str, port: int) -> None:
        self.node(sw).lft[self.node(dst_ca).ports[1].lid] = port

    def sl2vl(self, rule) -> Synth:
        """rule(switch Node, in, out) -> 16 VLs (or None for no table) for every port pair."""
        for sw in self.f.switches():
            nums = [p for p in sw.ports if p]
            for i in nums:
                for o in nums:
                    if i != o:
                        vls = rule(sw, i, o)
                        if vls is not None:
                            sw.sl2vl[(i, o)] = tuple(vls)
        for ca in self.f.cas():
            ca.sl2vl[(0, 1)] = tuple(range(16))
        return self


def ring(n: int = 3, *, clockwise: bool = True) -> Synth:
    """n switches in a ring, one CA each. Port 1: CA, 2: next switch, 3: previous switch.
    With clockwise=True every route runs clockwise (the classic 1-VL credit loop)."""
    s = Synth()
    for k in range(n):
        s.switch(f"sw{k}", 3)
    for k in range(n):
        s.link(f"sw{k}", 2, f"sw{(k + 1) % n}", 3)
        s.ca(f"h{k}", f"sw{k}", 1)
    top = max(p.lid for nd in s.f.nodes.values() for p in nd.ports.values())
    for k in range(n):
        sw = s.node(f"sw{k}")
        sw.lft = [NO_ROUTE] * (top + 1)
        for j in range(n):
            sw.lft[s.node(f"h{j}").ports[1].lid] = 1 if j == k else (2 if clockwise else 3)
    return s


def line(n: int = 3) -> Synth:
    """n switches in a line, one CA each, shortest paths."""
    s = Synth()
    for k in range(n):
        s.switch(f"sw{k}", 3)
    for k in range(n - 1):
        s.link(f"sw{k}", 2, f"sw{k + 1}", 3)
    for k in range(n):
        s.ca(f"h{k}", f"sw{k}", 1)
    return s.route_shortest()


def identity(sw, i, o):
    return list(range(16))


def transit_vl1(sw, i, o):
    """Ring ports 2/3 in and out: VL 1 for every SL; otherwise VL 0. Breaks the 3-ring loop
    because no route is longer than two switch hops."""
    return [1 if i != 1 and o != 1 else 0] * 16
