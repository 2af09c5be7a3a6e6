"""Hand-cabled ibsim net files for the adversarial dla tests, written without ibqos_sim's
generator: switches with 36 ports where each cable takes the next port of a seeded shuffled
list (non-contiguous, some ports unused), installer-style node descriptions, CAs with one or
two ports. The cabling is spelled out in the tests; this only numbers ports and writes text."""

from __future__ import annotations

import random
from pathlib import Path


class HandNet:
    def __init__(self, seed: int, switch_ports: int = 36):
        self.rng = random.Random(seed)
        self.switch_ports = switch_ports
        self.kind: dict[str, str] = {}
        self.free: dict[str, list[int]] = {}
        self.links: dict[str, dict[int, tuple[str, int]]] = {}

    def switch(self, name: str) -> str:
        ports = list(range(1, self.switch_ports + 1))
        self.rng.shuffle(ports)  # cables land on arbitrary, non-contiguous ports
        self._add(name, "Switch", ports)
        return name

    def hca(self, name: str, ports: int = 1) -> str:
        self._add(name, "Hca", list(range(1, ports + 1)))
        return name

    def _add(self, name: str, kind: str, ports: list[int]) -> None:
        assert name not in self.kind, name
        self.kind[name], self.free[name], self.links[name] = kind, ports, {}

    def cable(self, a: str, b: str, pa: int | None = None, pb: int | None = None) -> tuple[int, int]:
        """One cable; ports default to the next free ones (a == b: a loopback cable)."""
        pa = self._take(a, pa)
        pb = self._take(b, pb)
        self.links[a][pa] = (b, pb)
        self.links[b][pb] = (a, pa)
        return pa, pb

    def _take(self, node: str, port: int | None) -> int:
        free = self.free[node]
        port = free[0] if port is None else port
        free.remove(port)  # ValueError: the port is taken
        return port

    def port_to(self, a: str, b: str) -> int:
        """a's (first) port cabled to b."""
        return min(p for p, (peer, _) in self.links[a].items() if peer == b)

    def write(self, path: Path, first: str) -> Path:
        """ibsim attaches OpenSM to the first record: `first`, a CA."""
        order = [first] + [n for n in self.kind if n != first]
        out = ["# hand-cabled ibsim net file (plugin/tests/handnet.py)", ""]
        for name in order:
            kind = self.kind[name]
            width = self.switch_ports if kind == "Switch" else len(self.free[name]) + len(self.links[name])
            out.append(f'{kind}\t{width} "{name}"')
            for p, (peer, pp) in sorted(self.links[name].items()):
                out.append(f'[{p}]\t"{peer}"[{pp}]')
            out.append("")
        path.write_text("\n".join(out))
        return path

    def cas(self) -> int:
        """CA ports that are cabled (each gets a LID)."""
        return sum(len(v) for n, v in self.links.items() if self.kind[n] == "Hca")
