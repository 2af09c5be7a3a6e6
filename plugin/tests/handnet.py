"""Hand-cabled ibsim net files for the adversarial dla tests, written without ibqos_sim's
generator: switches with 36 ports where each cable takes the next port of a seeded shuffled
list (non-contiguous, some ports unused), installer-style node descriptions, CAs with one or
two ports. The cabling is spelled out in the tests; this only numbers ports and writes text.
A node may carry its own description (ibsim's `# DESC` after the node id: any bytes but a
newline, quotes included), a pinned GUID (ibsim's `switchguid=` / `caguid=` / `rtguid=` line
before it, so the same fabric can be listed in another order) and be a router (`Rt`)."""

from __future__ import annotations

import random
from pathlib import Path

GUID_LINE = {"Switch": "switchguid", "Hca": "caguid", "Rt": "rtguid"}


class HandNet:
    def __init__(self, seed: int, switch_ports: int = 36):
        self.rng = random.Random(seed)
        self.switch_ports = switch_ports
        self.kind: dict[str, str] = {}
        self.free: dict[str, list[int]] = {}
        self.links: dict[str, dict[int, tuple[str, int]]] = {}
        self.desc: dict[str, str] = {}
        self.guid: dict[str, int] = {}

    def switch(self, name: str, desc: str | None = None) -> str:
        ports = list(range(1, self.switch_ports + 1))
        self.rng.shuffle(ports)  # cables land on arbitrary, non-contiguous ports
        self._add(name, "Switch", ports, desc)
        return name

    def hca(self, name: str, ports: int = 1, desc: str | None = None) -> str:
        self._add(name, "Hca", list(range(1, ports + 1)), desc)
        return name

    def router(self, name: str, ports: int = 1, desc: str | None = None) -> str:
        self._add(name, "Rt", list(range(1, ports + 1)), desc)
        # ibsim 0.10 has no GUID base for routers (its table stops at switches): without an
        # rtguid line a router gets GUID 0 and OpenSM never discovers it
        self.guid[name] = 0x300000 + 16 * len(self.kind)
        return name

    def pin_guids(self) -> None:
        """Give every node a GUID of its own, in the order added (CAs 0x100000 + 16 i: their
        port GUIDs are the node's + port; switches 0x200000 + i; routers keep theirs), so the net
        listed in another order (`write(order=...)`) is the same fabric."""
        for i, name in enumerate(self.kind):
            if self.kind[name] != "Rt":
                self.guid[name] = 0x200000 + i if self.kind[name] == "Switch" else 0x100000 + 16 * i

    def _add(self, name: str, kind: str, ports: list[int], desc: str | None) -> None:
        assert name not in self.kind, name
        self.kind[name], self.free[name], self.links[name] = kind, ports, {}
        if desc is not None:
            self.desc[name] = desc

    def _width(self, name: str) -> int:
        return self.switch_ports if self.kind[name] == "Switch" else len(self.free[name]) + len(self.links[name])

    def cable(self, a: str, b: str, pa: int | None = None, pb: int | None = None) -> tuple[int, int]:
        """One cable; ports default to the next free ones (a == b: a loopback cable; and
        pa == pb too: one port cabled to itself, as a loopback plug, which ibsim takes)."""
        pa = self._take(a, pa)
        pb = pa if (a, pa) == (b, pb) else self._take(b, pb)
        self.links[a][pa] = (b, pb)
        self.links[b][pb] = (a, pa)
        return pa, pb

    def _take(self, node: str, port: int | None) -> int:
        free = self.free[node]
        port = free[0] if port is None else port
        free.remove(port)  # ValueError: the port is taken
        return port

    def renumbered(self, seed: int) -> HandNet:
        """The same cabling with every switch's port numbers permuted (GUIDs and descriptions
        kept; pin_guids first for the same fabric)."""
        rng = random.Random(seed)
        perm = {}
        for name, kind in self.kind.items():
            ports = list(range(1, self.switch_ports + 1))
            if kind == "Switch":
                rng.shuffle(ports)
            perm[name] = dict(zip(range(1, self.switch_ports + 1), ports, strict=True))
        out = HandNet(seed, self.switch_ports)
        out.kind, out.desc, out.guid = dict(self.kind), dict(self.desc), dict(self.guid)
        out.links = {
            n: {perm[n][p]: (peer, perm[peer][pp]) for p, (peer, pp) in ls.items()} for n, ls in self.links.items()
        }
        out.free = {n: [perm[n][p] for p in free] for n, free in self.free.items()}
        return out

    def port_to(self, a: str, b: str) -> int:
        """a's (first) port cabled to b."""
        return min(p for p, (peer, _) in self.links[a].items() if peer == b)

    def write(self, path: Path, first: str, order: list[str] | None = None) -> Path:
        """ibsim attaches OpenSM to the first record: `first`, a CA. `order`: the other nodes
        in this order (default: as added)."""
        order = [first] + [n for n in (order or self.kind) if n != first]
        out = ["# hand-cabled ibsim net file (plugin/tests/handnet.py)", ""]
        for name in order:
            kind = self.kind[name]
            if name in self.guid:
                out.append(f"{GUID_LINE[kind]}=0x{self.guid[name]:x}")
            desc = f" # {self.desc[name]}" if name in self.desc else ""
            out.append(f'{kind}\t{self._width(name)} "{name}"{desc}')
            for p, (peer, pp) in sorted(self.links[name].items()):
                out.append(f'[{p}]\t"{peer}"[{pp}]')
            out.append("")
        path.write_text("\n".join(out), encoding="utf-8")
        return path

    def cas(self) -> int:
        """CA ports that are cabled (each gets a LID)."""
        return sum(len(v) for n, v in self.links.items() if self.kind[n] == "Hca")
