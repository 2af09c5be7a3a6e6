"""ibsim net files (ibnetdiscover's topology format): read once, checked before anything is
written or started, so a bad file is `file:line: message` (exit 2), not an ibsim panic.

The check covers what ibsim would trip over or read otherwise than Python does: node records
and links as ibsim finds them (first column, spelling, lines of at most 254 bytes, ending at LF
only), ports within the node's count, peers that exist with that port and list the link back,
and node and port GUIDs that are non-zero and each node's own. ibnetdiscover's `key=value` lines, comments
and anything after a link's peer port (GUIDs, `# lid … 4xQDR`) are accepted as ibsim accepts
them."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ibqos.errors import InputError
from ibqos.fabric.check import MAX_PORTS
from ibqos.inputfile import MiB, read_text

# ibsim 0.10 (sim_net.c parse_netconf, parse_ports) takes a record or a link only from the
# line's first column and a record's type only as written here; any other line it skips
NODE = re.compile(r'^(Switch|Hca|Ca|Rt)\s+(\d+)\s+"([^"]*)"')
LINK = re.compile(r'^\[(\d+)\]\S*\s+"([^"]*)"\[(\d+)\]')
_ANY_NODE = re.compile(r'^\s*(switch|hca|ca|rt)\s+\d+\s+"', re.I)
# ibsim's line buffer (MAXLINE 256, readline): a longer line's rest is read as a line of its own
_LINE_BYTES = 254
KEYVAL = re.compile(r"^\s*\w+\s*=\s*\S+")


# what a node record's type keyword is to OpenSM (node type) and to ibsim
KINDS = {"switch": "SWITCH", "hca": "CA", "ca": "CA", "rt": "ROUTER"}


# ibsim 0.10 (sim_net.c, parse_node_desc): the node description is the text after the
# record's `#`, up to its closing quote when quoted (ibnetdiscover writes `# "node01 HCA-1"`),
# else up to " enhanced port ", " base port ", " lid " or " lmc "; without a `#` it is the
# node's id. Real ibnetdiscover files name nodes "S-<guid>"/"H-<guid>" and put the
# description in that comment, so the id and the description differ.
# A NodeDescription holds 64 bytes: ibsim keeps the first 63 (and a NUL), which can cut a
# UTF-8 character in two. The read-back and the dump loader turn the bytes left of it into
# U+FFFD (Python's errors="replace"); dropping them instead named a node the SM reached "not
# discovered".
_DESC_END = re.compile(r" enhanced port | base port | lid | lmc ")
_DESC_BYTES = 63


@dataclass(frozen=True)
class NetNode:
    """One node record: `Switch 36 "sw-g0-s0"` (type, ports, name as ibsim takes them)."""

    line: int
    kind: str  # SWITCH, CA or ROUTER (KINDS)
    ports: int
    name: str  # the quoted id: what ibsim's console commands (Unlink, ReLink) take
    desc: str  # the node description ibsim gives it, which OpenSM and the read-back see


def _node_desc(rest: str, name: str) -> str:
    """What ibsim makes the node description of a record whose id is `name`, from the text
    after the id (`rest`)."""
    if "#" not in rest:
        return name
    s = rest.split("#", 1)[1].lstrip()
    if s.startswith('"'):
        desc = s[1:].split('"', 1)[0]
    else:
        m = _DESC_END.search(s)
        desc = s[: m.start()] if m else s
    return (desc or name).encode()[:_DESC_BYTES].decode(errors="replace")


def read_net(netfile: str | Path) -> str:
    """An ibsim net file's text (inputfile.py: a bounded regular file, strictly UTF-8)."""
    return read_text(netfile, limit=64 * MiB, what="an ibsim net file")


def net_lines(text: str) -> Iterator[tuple[int, str]]:
    """(number, line) as ibsim reads them: a line ends at LF only (a CR before it is the CR LF
    the harness hands ibsim as LF, fabric.py). str.splitlines also ends one at FF, VT, NEL,
    U+2028 and more, which ibsim keeps inside a description: a 'rack 3\\fHCA-1' there was two
    lines to the check and one to ibsim."""
    for n, line in enumerate(text.split("\n"), 1):
        yield n, line.removesuffix("\r")


def node_record(line: str, n: int = 0) -> NetNode | None:
    """The node record on `line` (number `n`), or None when the line is not one."""
    m = NODE.match(line)
    if not m:
        return None
    return NetNode(n, KINDS[m.group(1).lower()], int(m.group(2)), m.group(3), _node_desc(line[m.end() :], m.group(3)))


def node_records(text: str) -> Iterator[NetNode]:
    """The node records of a net file's text, in file order: the one reader of them."""
    for n, line in net_lines(text):
        if node := node_record(line, n):
            yield node


# ibsim 0.10 (sim_net.c new_node, parse_guidbase): each node type numbers its nodes from a
# base (`caguid=`/`hcaguids=`, `switchguid=`, `rtguid=` set it; `+` adds to it), a switch
# takes one GUID, a CA or router one for the node and one per port (port p: node GUID + p).
_GUID_BASES = {"switchguid": "SWITCH", "caguid": "CA", "hcaguids": "CA", "rtguid": "ROUTER"}
_FIRST_GUID = {"CA": 0x100000, "SWITCH": 0x200000, "ROUTER": 0}


def node_guids(text: str) -> dict[str, int]:
    """Node id -> the node GUID ibsim gives it."""
    base, nxt = dict(_FIRST_GUID), dict(_FIRST_GUID)
    out: dict[str, int] = {}
    for n, line in net_lines(text):
        if node := node_record(line, n):
            out[node.name] = nxt[node.kind]
            nxt[node.kind] += 1 if node.kind == "SWITCH" else node.ports + 1
            continue
        key = next((k for k in _GUID_BASES if line.startswith(k)), None)
        if key and (m := re.match(r"\s*([=+])\s*(0[xX][0-9a-fA-F]+|\d+)", line[len(key) :])):
            kind, value = _GUID_BASES[key], int(m.group(2), 0)
            if m.group(1) == "=":
                base[kind] = value
            nxt[kind] = base[kind] + (value if m.group(1) == "+" else 0)
    return out


def _check_guid_base(line: str, netfile: str | Path, n: int) -> None:
    """A GUID base line's value is a number: ibsim reads 'caguid=0xZZZ' as 0 (strtoull), and
    OpenSM drops a node whose GUID is 0 (ERR 0D16: the dry run ended in exit 3, naming no line)."""
    key = next((k for k in _GUID_BASES if line.startswith(k)), None)
    if key and not re.match(r"\s*[=+]\s*(0[xX][0-9a-fA-F]+|\d+)\b", line[len(key) :]):
        raise InputError(f"{line.strip()[:40]}: {key} takes a number (0x and hex digits)", file=netfile, line=n)


def _check_guids(text: str, netfile: str | Path) -> None:
    """Every node and port GUID ibsim gives is non-zero and its own. ibsim stops at a node GUID
    given twice ('cannot parse this net file', two switches under one switchguid= line copied
    with its block); OpenSM drops a GUID 0 (a caguid=0x0 line)."""
    guids = node_guids(text)
    taken: dict[int, NetNode] = {}
    for r in node_records(text):
        g = guids[r.name]
        if g == 0:
            raise InputError(
                f"{r.name!r} gets GUID 0 from the GUID line before it: OpenSM drops a node whose GUID is 0",
                file=netfile,
                line=r.line,
            )
        for guid in [g] if r.kind == "SWITCH" else [g, *range(g + 1, g + r.ports + 1)]:
            if (other := taken.get(guid)) is not None:
                raise InputError(
                    f"{r.name!r} gets GUID 0x{guid:016x}, which {other.name!r} (line {other.line}) has already: "
                    "give each node its own GUID line",
                    file=netfile,
                    line=r.line,
                )
            taken[guid] = r


def ibsim_node_id(netfile: str | Path, node: str) -> str:
    """The id ibsim's console knows a node by, for `node` given as that id, as the node's
    description (what a fault names, from the read-back fabric) or as its node or port GUID
    (0x...: the one name of a node whose description others share)."""
    text = read_net(netfile)
    records = list(node_records(text))
    if any(r.name == node for r in records):
        return node
    if re.fullmatch(r"0[xX][0-9a-fA-F]{1,16}", node):
        guid, span = int(node, 16), {r.name: 0 if r.kind == "SWITCH" else r.ports for r in records}
        hit = [i for i, g in node_guids(text).items() if g <= guid <= g + span[i]]
        if hit:
            return hit[0]
    ids = [r.name for r in records if r.desc == node]
    if len(ids) == 1:
        return ids[0]
    if not ids:
        raise InputError(f"no node {node!r} (neither a node id nor a node description)", file=netfile)
    raise InputError(
        f"node description {node!r} is shared by {len(ids)} nodes ({', '.join(ids[:4])}): name one by its id",
        file=netfile,
    )


def undiscovered(netfile: str | Path, descs: Iterable[str]) -> list[str]:
    """The net file's nodes (by description) that are not among `descs`, the nodes a
    read-back found: those the SM could not reach (an island, a link both ends do not list)."""
    missing = Counter(r.desc for r in node_records(read_net(netfile)))
    missing.subtract(descs)
    return sorted(d for d, n in missing.items() for _ in range(max(n, 0)))


# ibsim's link settings and the values it takes (sim_net.c is_link*_valid); any other value
# is an ibpanic with no line
_LINK_SETTINGS = {"width": (1, 31), "speed": (1, 7), "extspeed": (0, 7)}


def _check_link_setting(body: str, netfile: str | Path, n: int) -> None:
    key, _, value = (s.strip() for s in body.partition("="))
    if key not in _LINK_SETTINGS:
        return
    lo, hi = _LINK_SETTINGS[key]
    try:
        v = int(value, 0)
    except ValueError:
        v = None
    if v is None or not lo <= v <= hi:
        raise InputError(f"{key}={value[:20]}: ibsim takes {lo}..{hi}", file=netfile, line=n)


# ibsim 0.10 (sim_net.c parse_port): on a link line, every '=' after the peer is a link
# option, named by the nearest letter before it, comments included: w (width), s (speed), e
# (extended speed), m (MTUCap code, the patched ibsim's:
# ci-sim/ibsim-patch/0002-mtucap-and-neighbor-mtu.patch), any other letter ignored. A node
# description in the comment holding "class=io" is read as s=io, which ibsim refuses without
# saying why; one holding "dim=1" as m=1, which it takes: that link then ran MTU 256 and the dry
# run failed on an MTU the cluster does not have. An option in the comment is refused whatever
# its value (ibnetdiscover writes none; an admin's own option goes before the '#').
_LINK_OPTIONS = {"w": "width", "s": "speed", "e": "extspeed", "m": "patched MTUCap"}
_OPTION_RANGES = {**_LINK_SETTINGS, "patched MTUCap": (1, 5)}
_STRTOUL = re.compile(r"\s*\+?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")


def _check_link_options(line: str, after: int, netfile: str | Path, n: int) -> None:
    comment = line.find("#", after)
    comment = len(line) if comment < 0 else comment
    for eq in (i for i, c in enumerate(line) if c == "=" and i >= after):
        letter = next((c for c in reversed(line[:eq]) if c.isascii() and c.isalpha()), "")
        if letter not in _LINK_OPTIONS:
            continue
        key = _LINK_OPTIONS[letter]
        lo, hi = _OPTION_RANGES[key]
        m = _STRTOUL.match(line, eq + 1)
        word = line[: eq + 1].split()[-1] + line[eq + 1 :].split(None, 1)[0] if line[eq + 1 :].strip() else "="
        if not lo <= (int(m.group(1), 0) if m else 0) <= hi:
            raise InputError(
                f"ibsim reads {word[:30]!r} on this link line as its {key} option {letter}= (an '=' anywhere after "
                f"the peer, its comment included) and refuses the value: it takes {lo}..{hi}; "
                "keep '=' out of node descriptions",
                file=netfile,
                line=n,
            )
        if eq > comment:
            raise InputError(
                f"ibsim reads {word[:30]!r} in this link line's comment as its {key} option {letter}= and sets the "
                f"link's {key} from it (an '=' anywhere after the peer, its comment included); keep '=' out of node "
                "descriptions, or give the option before the '#'",
                file=netfile,
                line=n,
            )


# ibsim 0.10's enabled link widths (sim.h LINKWIDTH_*, a bit each): a port takes the one a
# `lid N 4xQDR` in its link line's comment names (sim_net.c parse_port_link_width_and_speed),
# else a w= option, else the file's width= (default 4x). Two ends sharing no width stop ibsim
# with an ibpanic ('mismatched enabled width') naming GUIDs, not lines.
_WIDTH_BITS = {1: "1x", 2: "4x", 4: "8x", 8: "12x", 16: "2x"}
_COMMENT_WIDTHS = {12: 11, 8: 4, 4: 3, 1: 1, 2: 16}  # 12x also runs 1x/4x, 4x also 1x
_COMMENT_WIDTH = re.compile(r'lid[^"]*$')
_SCANF_WIDTH = re.compile(r"lid\s*[-+]?\d+\s*([-+]?\d+)x\s*\S")


def _enabled_width(line: str, after: int, kind: str, width: int) -> int:
    """The widths ibsim enables on a link end from its line (`width`: what it has without)."""
    for eq in (i for i, c in enumerate(line) if c == "=" and i >= after):
        if next((c for c in reversed(line[:eq]) if c.isascii() and c.isalpha()), "") == "w":
            m = _STRTOUL.match(line, eq + 1)
            width = int(m.group(1), 0) if m else 0
    c = _COMMENT_WIDTH.search(line, after) if kind != "ROUTER" else None
    m = _SCANF_WIDTH.match(c.group(0)) if c else None
    return _COMMENT_WIDTHS.get(int(m.group(1)), width) if m else width


def _widths(bits: int) -> str:
    return "/".join(name for bit, name in _WIDTH_BITS.items() if bits & bit) or "none"


def _check_link_ends(
    links: list[tuple[int, str, int, int, str]],
    nodes: dict[str, int],
    widths: dict[tuple[str, int], int],
    netfile: str | Path,
) -> None:
    """Every link's peer exists with that port, and both ends, where both list the link,
    agree on each other and share a width."""
    ends = {(owner, port): (peer, pport, n) for n, owner, port, pport, peer in links}
    for n, owner, port, pport, peer in links:
        if (peer, pport) == (owner, port):
            # no cable joins a port to itself: a typo, though ibsim takes it (and dla routes around it)
            raise InputError(f"{owner!r} port {port} links to itself", file=netfile, line=n)
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
        back = ends.get((peer, pport))
        if back is not None and back[:2] != (owner, port):
            # ibsim builds no fabric then, and says only "sim_init failed"
            raise InputError(
                f"{owner!r} port {port} links to {peer!r} port {pport}, but line {back[2]} links that port "
                f"to {back[0]!r} port {back[1]}",
                file=netfile,
                line=n,
            )
        if back is None:
            # ibsim: 'remote port 1 in node ... is not connected to node ...', then only
            # "sim_init failed"
            raise InputError(
                f"{owner!r} port {port} links to {peer!r} port {pport}, whose record lists no link on that port: "
                "ibsim needs both ends of a link listed, as ibnetdiscover writes them",
                file=netfile,
                line=n,
            )
        wa, wb = widths[(owner, port)], widths[(peer, pport)]
        if not wa & wb:
            raise InputError(
                f"{owner!r} port {port} runs {_widths(wa)} wide and {peer!r} port {pport} (line {back[2]}) "
                f"{_widths(wb)}: ibsim finds no width both ends take and stops; give both the same (as in "
                "'lid N 4xEDR' after the '#')",
                file=netfile,
                line=n,
            )


def _check_line_form(line: str, netfile: str | Path, n: int) -> None:
    """A line ibsim would read otherwise than this check does."""
    if "\0" in line:
        raise InputError("a NUL byte: ibsim ends the line's text there", file=netfile, line=n)
    if len(line.encode()) > _LINE_BYTES:
        # the rest began a line of its own, which ended the record's port list: the links
        # after it were dropped (ibsim: "sim_init failed", no line)
        raise InputError(
            f"{len(line.encode())} bytes: ibsim reads {_LINE_BYTES} of a line and the rest as a line of its own; "
            "shorten its comment",
            file=netfile,
            line=n,
        )
    if (_ANY_NODE.match(line) and not NODE.match(line)) or (line[:1].isspace() and line.lstrip()[:1] == "["):
        # ibsim skipped it: its links had no node ('sim_init failed', no line)
        raise InputError(
            f"{line.strip()[:40]!r}: ibsim reads a record (Switch, Hca, Ca or Rt, spelt so) or a link only "
            "from the line's first column",
            file=netfile,
            line=n,
        )
    if line.lstrip().startswith("[") and not LINK.match(line):
        # before: '... lists 1 of its 36 ports and this line follows at once' for '[-3] ...'
        raise InputError(
            f'not a link ([PORT] "PEER"[PORT], both ports numbers): {line.strip()[:60]!r}', file=netfile, line=n
        )


def _check_listed(
    port: int, node: str, listing: str | None, listed: dict[int, int], ended: int, netfile: str | Path, n: int
) -> None:
    """A link line ibsim reads as one of `node`'s: ibsim (parse_ports) reads a record's port
    lines up to a blank or other line or until it has read as many as the node has ports, and
    skips a link line after that; its far end then listed a link ibsim never made ('ibsim
    cannot build a fabric', no line). A port listed twice counts twice."""
    if listing is None:
        raise InputError(
            f"a link of {node!r} past the end of its port list (line {ended}: a blank or other line, or its last "
            "port): ibsim skips it; keep a record's links together under it",
            file=netfile,
            line=n,
        )
    if port in listed:
        raise InputError(
            f"port {port} of {node!r} is listed twice (line {listed[port]} too): ibsim counts port lines, not ports, "
            "and skips the record's links past its port count",
            file=netfile,
            line=n,
        )


def check_net(netfile: str | Path, text: str | None = None) -> None:
    text = read_net(netfile) if text is None else text
    nodes: dict[str, int] = {}
    links: list[tuple[int, str, int, int, str]] = []  # line, node, port, peer port, peer
    current = None
    listing: str | None = None  # the record whose port lines ibsim is reading
    listed: dict[int, int] = {}  # port -> line
    ended = 0  # the line that ended the last port list
    router_guids = False
    first_line, first_kind = 0, ""  # the first node record's: where ibsim attaches OpenSM
    net_width, node_width = 2, 2  # the file's width= (4x) and the current record's
    widths: dict[tuple[str, int], int] = {}  # (node, port) -> the widths ibsim enables
    current_kind = ""
    for n, line in net_lines(text):
        body = line.split("#", 1)[0] if not LINK.match(line) else line
        if not line.strip() or (line[:1].isspace() and not LINK.match(line)):
            listing, ended = None, n  # ibsim: the port list ends here, and this line with it
        if not body.strip():
            continue
        _check_line_form(line, netfile, n)
        if listing is not None and not LINK.match(line) and len(listed) < nodes[listing]:
            # ibsim (parse_ports) reads a record's port lines until it has all its ports or
            # meets another line, and drops that line: a record or a key=value line there is lost
            raise InputError(
                f"{listing!r} lists {len(listed)} of its {nodes[listing]} ports and this line follows at once: "
                "ibsim takes it as the end of the port list and drops it; leave a blank line before it",
                file=netfile,
                line=n,
            )
        if node := node_record(line, n):
            name, nports = node.name, node.ports
            if not name:
                raise InputError("a node needs a name", file=netfile, line=n)
            if node.kind == "ROUTER" and not router_guids:
                # ibsim 0.10 numbers routers from GUID 0 (its absguids[] stops at switches),
                # and OpenSM drops a node whose GUID is 0 (ERR 0D16)
                raise InputError(
                    f"router {name!r} has no GUID: give an rtguid=0x... line before it, as ibnetdiscover writes",
                    file=netfile,
                    line=n,
                )
            if name in nodes:
                raise InputError(f"node {name!r} is defined twice", file=netfile, line=n)
            if not 1 <= nports <= MAX_PORTS:
                raise InputError(f"node {name!r} has {nports} ports (1..{MAX_PORTS})", file=netfile, line=n)
            nodes[name], current = nports, name
            current_kind, node_width = node.kind, net_width
            first_line, first_kind = (first_line, first_kind) if first_line else (n, node.kind)
            listing, listed = name, {}
        elif m := LINK.match(line):
            if current is None:
                raise InputError("a link before any node record", file=netfile, line=n)
            port, peer, pport = int(m.group(1)), m.group(2), int(m.group(3))
            if not 1 <= port <= nodes[current]:
                raise InputError(f"port {port} of {current!r}, which has {nodes[current]}", file=netfile, line=n)
            _check_listed(port, current, listing, listed, ended, netfile, n)
            _check_link_options(line, m.end(), netfile, n)
            widths[(current, port)] = _enabled_width(line, m.end(), current_kind, node_width)
            links.append((n, current, port, pport, peer))
            listed[port] = n
            if len(listed) == nodes[current]:  # ibsim reads no more port lines of it
                listing, ended = None, n
        elif KEYVAL.match(line):
            router_guids |= line.strip().startswith("rtguid")
            _check_link_setting(body, netfile, n)
            _check_guid_base(line, netfile, n)
            key, _, value = (t.strip() for t in body.partition("="))
            net_width = int(value, 0) if key == "width" else net_width
        else:
            raise InputError(f"not a node record, a link or key=value: {line.strip()[:60]!r}", file=netfile, line=n)
    if not nodes:
        raise InputError("no Switch/Hca records: not an ibsim net file", file=netfile)
    _check_link_ends(links, nodes, widths, netfile)
    _check_guids(text, netfile)
    first = next(iter(nodes))
    if not any(first in (owner, peer) for _, owner, _, _, peer in links):
        # OpenSM would discover its own node alone (the dry run then had nothing to read back)
        raise InputError(
            f"ibsim attaches OpenSM to the first node, {first!r}, which has no link: link it, or put a linked CA first",
            file=netfile,
            line=first_line,
        )
    if first_kind != "SWITCH" and not any((first, 1) in ((o, p), (peer, pp)) for _, o, p, pp, peer in links):
        # OpenSM binds to port 1 of a CA (libumad2sim's one port), down: it discovered its own
        # node alone, and the dry run ended in an internal error ('no port reports a VLArb
        # capacity')
        raise InputError(
            f"ibsim attaches OpenSM to port 1 of the first node, {first!r}, and that port has no link: "
            "link it, or put a CA linked on port 1 first",
            file=netfile,
            line=first_line,
        )
