"""ibsim net files (ibnetdiscover's topology format): read once, checked before anything is
written or started, so a bad file is `file:line: message` (exit 2), not an ibsim panic.

The check covers what ibsim would trip over: node records, link lines, ports within the
node's count, and peers that exist with that port. ibnetdiscover's `key=value` lines, comments
and anything after a link's peer port (GUIDs, `# lid … 4xQDR`) are accepted as ibsim accepts
them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ibqos.errors import InputError
from ibqos.fabric.check import MAX_PORTS
from ibqos.inputfile import MiB, read_text

NODE = re.compile(r'^\s*(Switch|Hca|Ca|Rt)\s+(\d+)\s+"([^"]*)"', re.I)
LINK = re.compile(r'^\s*\[(\d+)\]\S*\s+"([^"]*)"\[(\d+)\]')
KEYVAL = re.compile(r"^\s*\w+\s*=\s*\S+")


# what a node record's type keyword is to OpenSM (node type) and to ibsim
KINDS = {"switch": "SWITCH", "hca": "CA", "ca": "CA", "rt": "ROUTER"}


@dataclass(frozen=True)
class NetNode:
    """One node record: `Switch 36 "sw-g0-s0"` (type, ports, name as ibsim takes them)."""

    line: int
    kind: str  # SWITCH, CA or ROUTER (KINDS)
    ports: int
    name: str  # quoted in the file; ibsim makes it the node description


def read_net(netfile: str | Path) -> str:
    """An ibsim net file's text (inputfile.py: a bounded regular file, strictly UTF-8)."""
    return read_text(netfile, limit=64 * MiB, what="an ibsim net file")


def node_record(line: str, n: int = 0) -> NetNode | None:
    """The node record on `line` (number `n`), or None when the line is not one."""
    m = NODE.match(line)
    return NetNode(n, KINDS[m.group(1).lower()], int(m.group(2)), m.group(3)) if m else None


def node_records(text: str) -> Iterator[NetNode]:
    """The node records of a net file's text, in file order: the one reader of them."""
    for n, line in enumerate(text.splitlines(), 1):
        if node := node_record(line, n):
            yield node


def check_net(netfile: str | Path, text: str | None = None) -> None:
    text = read_net(netfile) if text is None else text
    nodes: dict[str, int] = {}
    links: list[tuple[int, str, int, int, str]] = []  # line, node, port, peer port, peer
    current = None
    for n, line in enumerate(text.splitlines(), 1):
        body = line.split("#", 1)[0] if not LINK.match(line) else line
        if not body.strip():
            continue
        if node := node_record(line, n):
            name, nports = node.name, node.ports
            if not name:
                raise InputError("a node needs a name", file=netfile, line=n)
            if name in nodes:
                raise InputError(f"node {name!r} is defined twice", file=netfile, line=n)
            if not 1 <= nports <= MAX_PORTS:
                raise InputError(f"node {name!r} has {nports} ports (1..{MAX_PORTS})", file=netfile, line=n)
            nodes[name], current = nports, name
        elif m := LINK.match(line):
            if current is None:
                raise InputError("a link before any node record", file=netfile, line=n)
            port, peer, pport = int(m.group(1)), m.group(2), int(m.group(3))
            if not 1 <= port <= nodes[current]:
                raise InputError(f"port {port} of {current!r}, which has {nodes[current]}", file=netfile, line=n)
            links.append((n, current, port, pport, peer))
        elif not KEYVAL.match(line):
            raise InputError(f"not a node record, a link or key=value: {line.strip()[:60]!r}", file=netfile, line=n)
    if not nodes:
        raise InputError("no Switch/Hca records: not an ibsim net file", file=netfile)
    for n, owner, port, pport, peer in links:
        if peer not in nodes:
            raise InputError(
                f"{owner!r} port {port} links to {peer!r}, which the file does not define", file=netfile, line=n
            )
        if not 1 <= pport <= nodes[peer]:
            raise InputError(
                f"{owner!r} port {port} links to port {pport} of {peer!r}, which has {nodes[peer]}",
                file=netfile,
                line=n,
            )
