"""Load the fabric model from OpenSM's dump files, the only parser of these formats in ibqos.

OpenSM writes them into `dump_files_dir` when run with `-D 0x43` (see opensm/osm_dump.c):
- opensm-subnet.lst: one line per port with a link, both ends of it, and the near end's
  width / state / speed;
- opensm-lfts.dump: per switch, `0x<lid> <port> # <owner>` for every routed LID;
- opensm-sl2vl.dump: per switch, rows `<in> <out> : <16 VLs>` for every linked out port and
  every in port; per CA port one row `0 0 : ...`. OpenSM writes it only with `qos TRUE` or
  with a routing engine that sets SL2VL. Without it (a production SM with `qos FALSE`)
  `assume_default_sl2vl` gives every port OpenSM's default mapping, as ibdmchk assumes one.

The dumps carry no VLArb, VLHighLimit, VLCap, OperVLs, MTU or MTUCap (opensm-subnet.lst has
width, state and speed per link, nothing else): those stay None / 0.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

from ..errors import ExternalError, InputError, one_line
from ..inputfile import byte_lines
from .model import Fabric, Node, NodeKind, Port

SUBNET_LST = "opensm-subnet.lst"
LFTS_DUMP = "opensm-lfts.dump"
SL2VL_DUMP = "opensm-sl2vl.dump"

# OpenSM's default SL2VL (OSM_DEFAULT_QOS_SL2VL, include/opensm/osm_base.h): SL n on VL n, SL 15
# on VL 7. With qos FALSE OpenSM programs no SL2VL and writes no opensm-sl2vl.dump; the ports
# then hold this mapping (ibsim's do: manager/tests/test_verify_default_sl2vl.py reads them).
OSM_DEFAULT_SL2VL: tuple[int, ...] = (*range(15), 7)

_KINDS: dict[str, NodeKind] = {"SW": "switch", "CA": "ca", "Rt": "router"}
_END = (
    r"\{ (?P<t{n}>SW|CA|Rt|\*\*)(?:-SM)? Ports:(?P<np{n}>[0-9A-Fa-f]+) SystemGUID:[0-9A-Fa-f]+"
    r" NodeGUID:(?P<ng{n}>[0-9A-Fa-f]+) PortGUID:(?P<pg{n}>[0-9A-Fa-f]+) VenID:[0-9A-Fa-f]+"
    r" DevID:[0-9A-Fa-f]+ Rev:[0-9A-Fa-f]+ \{(?P<d{n}>.*?)\} LID:(?P<lid{n}>[0-9A-Fa-f]+)"
    r" PN:(?P<pn{n}>[0-9A-Fa-f]+) \}"
)
_LINK = re.compile(
    _END.replace("{n}", "a")
    + " "
    + _END.replace("{n}", "b")
    + r" PHY=(?P<phy>\S+) LOG=(?P<log>\S+) SPD=(?P<spd>\S+)\s*$"
)
_LFT_HEAD = re.compile(r"Unicast lids \[0-(\d+)\] of switch Lid \d+ guid 0x([0-9a-fA-F]+) \(.*\):\s*$")
_LFT_ROW = re.compile(r"0x([0-9a-fA-F]+) (\d+) # (?:.* portguid 0x([0-9a-fA-F]+):.*|unknown node and type)\s*$")
_LFT_FOOT = re.compile(r"(\d+) lids dumped\s*$")
_SL2VL_HEAD = re.compile(r'(Switch|Channel Adapter|Router) 0x([0-9a-fA-F]+), base LID \d+, ".*"\s*$')
_SL2VL_ROW = re.compile(r"(\d+)\s+(\d+)\s+:((?:\s+\d+){16})\s*$")


def load_dumps(directory: str | Path, *, require_sl2vl: bool = True) -> Fabric:
    """The fabric model of an OpenSM dump directory.

    Raises InputError naming file and line for a missing or garbled dump. Without
    opensm-sl2vl.dump and with require_sl2vl=False the SL2VL tables stay empty.

    A running OpenSM rewrites every dump in place, one after another, at the end of each heavy
    sweep: a read across that moment takes the subnet of one sweep and the tables of the next
    (a recabled CA in the SL2VL dump and not in the subnet list, or a fault's new routes on the
    old VLs). Such a read is seen by the dumps' sizes and times changing during it, and made
    again. A read that falls wholly between two files of one rewrite changes nothing during it:
    it is seen by the files' order, which a whole pass keeps (_in_pass_order), and made again
    too. ExternalError when OpenSM rewrote them during every attempt.
    """
    d = Path(directory)
    if not d.is_dir():
        raise InputError("not a directory of OpenSM dumps", file=d)
    for attempt in range(REREAD_ATTEMPTS):
        before = _stamp(d)
        try:
            fabric = _load_once(d, require_sl2vl)
        except InputError:
            if _stamp(d) == before and _in_pass_order(d, before):
                raise
        else:
            if _stamp(d) == before and _in_pass_order(d, before):
                return fabric
        time.sleep(REREAD_PAUSE_S * (attempt + 1))
    raise ExternalError(
        f"{one_line(str(d))}: OpenSM rewrote these dumps while they were read, {REREAD_ATTEMPTS} times "
        "in a row: read them again after its sweep"
    )


# OpenSM writes a sweep's dumps in well under a second on a fabric of thousands of ports; a few
# pauses growing to a second cover that, and a SM that sweeps heavily back to back still ends
REREAD_ATTEMPTS = 5
REREAD_PAUSE_S = 0.2


# OpenSM 3.3.23's osm_dump_all writes, one file after the other (fopen "w": truncated in place),
# opensm-lid-matrix.dump, opensm-lfts.dump, opensm.fdbs, opensm.mcfdbs, opensm-sl2vl.dump (qos
# TRUE or an engine that sets SL2VL), opensm-subnet.lst. Whole, a pass has mtime(lfts) <=
# mtime(sl2vl) <= mtime(subnet.lst); a reader between two of its files sees a newer file before
# an older one. Only while the dumps are being written: an admin's copy (cp -r) has its own
# order. The newest mtime of any of them, fdbs included (rewritten between lfts and sl2vl, its
# mtime moving at each buffer flush), says a writer may be at work. RECENT_S stays below the
# re-read budget (about 2 s before the last attempt) so that a copy made just now, its order
# arbitrary, is read by the last attempt.
_PASS_ORDER = (LFTS_DUMP, SL2VL_DUMP, SUBNET_LST)
_PASS_FILES = ("opensm-lid-matrix.dump", LFTS_DUMP, "opensm.fdbs", "opensm.mcfdbs", SL2VL_DUMP, SUBNET_LST)
RECENT_S = 1.5


def _in_pass_order(d: Path, stamp: tuple[tuple[int, int, int] | None, ...]) -> bool:
    """The dumps as a whole pass of osm_dump_all leaves them, or not written recently."""
    mtimes = dict(zip((SUBNET_LST, LFTS_DUMP, SL2VL_DUMP), (s[2] if s else None for s in stamp), strict=True))
    present = [t for name in _PASS_ORDER if (t := mtimes[name]) is not None]
    if present == sorted(present):
        return True
    newest = 0
    for name in _PASS_FILES:
        with suppress(OSError):
            newest = max(newest, (d / name).stat().st_mtime_ns)
    # a mtime ahead of this clock (a copy from another host) is no writer's here
    return not 0 <= time.time_ns() - newest < RECENT_S * 1e9


def _stamp(d: Path) -> tuple[tuple[int, int, int] | None, ...]:
    """What changes when OpenSM rewrites a dump: its inode, size and modification time."""
    out: list[tuple[int, int, int] | None] = []
    for name in (SUBNET_LST, LFTS_DUMP, SL2VL_DUMP):
        try:
            st = (d / name).stat()
        except OSError:
            out.append(None)
        else:
            out.append((st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(out)


def _load_once(d: Path, require_sl2vl: bool) -> Fabric:
    fabric = Fabric(source=f"dumps:{d}")
    fabric.was_read_from(d)
    _read_subnet(fabric, d / SUBNET_LST)
    _read_lfts(fabric, d / LFTS_DUMP)
    sl2vl = d / SL2VL_DUMP
    if is_there(sl2vl) or require_sl2vl:
        _read_sl2vl(fabric, sl2vl)
    fabric.pad_lfts()
    return fabric


def assume_default_sl2vl(fabric: Fabric) -> int:
    """Give every port of a model without SL2VL OpenSM's default mapping, keyed as OpenSM's
    SL2VL dump keys it (switch: every in port, 0 included, to every linked out port; CA: each
    linked port). Returns the number of tables set."""
    n = 0
    for node in fabric.nodes.values():
        linked = sorted(num for num, p in node.ports.items() if num and p.remote is not None)
        if node.kind == "switch":
            keys = [(i, o) for i in range(node.nports + 1) for o in linked]
        else:
            keys = [(0, num) for num in linked]
        for key in keys:
            node.sl2vl.setdefault(key, OSM_DEFAULT_SL2VL)
            n += 1
    return n


def is_there(path: Path) -> bool:
    """A dump is there when its name is, whatever it points at: a symlink loop or a dangling
    link is a dump that cannot be read (an error naming it), never a dump OpenSM did not write
    (exists() says False for both, and a missing SL2VL dump is read as OpenSM's default)."""
    return os.path.lexists(path)


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    if not is_there(path):
        raise InputError(
            "missing: OpenSM writes it with -D 0x43 and dump_files_dir"
            + (" (and qos TRUE)" if path.name == SL2VL_DUMP else ""),
            file=path,
        )
    # OpenSM prints node descriptions with every byte that is not printable ASCII as a space
    # (clean_nodedesc); a dump edited or copied otherwise is read with such bytes replaced
    for no, raw in enumerate(byte_lines(path, line_max=DUMP_LINE_MAX), 1):
        if not raw.endswith(b"\n"):  # OpenSM ends every dump line with one
            raise InputError("ends in the middle of a line: the dump is cut short", file=path, line=no)
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if line and not line.isspace():
            yield no, line


# A dump's lines are short (a subnet list's: two 64-byte descriptions and the GUIDs, ~400 bytes)
DUMP_LINE_MAX = 64 * 1024


def _read_subnet(fabric: Fabric, path: Path) -> None:
    for no, line in _lines(path):
        m = _LINK.match(line)
        if not m:
            raise InputError("not an OpenSM topology line", file=path, line=no)
        a, pa = _endpoint(fabric, m, "a", path, no)
        b, pb = _endpoint(fabric, m, "b", path, no)
        port = a.ports[pa]
        if port.remote not in (None, (b.guid, pb)):
            raise InputError(f"port {pa} of 0x{a.guid:016x} linked twice", file=path, line=no)
        port.remote = (b.guid, pb)
        b.ports[pb].remote = b.ports[pb].remote or (a.guid, pa)
        port.width = m["phy"].upper()
        port.speed = m["spd"]
    if not fabric.nodes:
        raise InputError("no links listed", file=path)


def _endpoint(fabric: Fabric, m: re.Match[str], n: str, path: Path, no: int) -> tuple[Node, int]:
    kind = _KINDS.get(m["t" + n])
    if kind is None:
        raise InputError(f"unknown node type {m['t' + n]!r}", file=path, line=no)
    guid, pguid = int(m["ng" + n], 16), int(m["pg" + n], 16)
    lid, pn, nports = int(m["lid" + n], 16), int(m["pn" + n], 16), int(m["np" + n], 16)
    node = fabric.nodes.get(guid)
    if node is None:
        node = fabric.nodes[guid] = Node(guid=guid, kind=kind, desc=m["d" + n], nports=nports)
        if kind == "switch":
            node.ports[0] = Port(num=0, guid=pguid, lid=lid)
    elif node.kind != kind or node.nports != nports:
        raise InputError(f"node 0x{guid:016x} listed with different type or port count", file=path, line=no)
    if not 0 < pn <= nports:
        raise InputError(f"port {pn} out of range 1..{nports}", file=path, line=no, field="PN")
    if pn not in node.ports:
        node.ports[pn] = Port(num=pn) if kind == "switch" else Port(num=pn, guid=pguid, lid=lid)
    return node, pn


def _read_lfts(fabric: Fabric, path: Path) -> None:
    """A dump cut short is bad input, not a fabric with unrouted LIDs: every switch block
    must end with its `N lids dumped` line (N: the block's top LID; unassigned LIDs have no
    row), and every switch of the topology must have a block."""
    owner: dict[int, int] = {}  # LID -> port GUID, from the row comments
    owner_line: dict[int, int] = {}  # LID -> the line that named its owner first
    node: Node | None = None
    rows = last = top = 0
    seen: set[int] = set()
    for no, line in _lines(path):
        last = no
        # Rows are `0x%04x %03u # ...` (osm_dump.c) and make up nearly all of a large dump:
        # slice them; the regexes handle headers, footers and anything malformed.
        if line[:2] == "0x" and line[6:7] == " " and line[10:13] == " # " and node is not None:
            try:
                lid, port = int(line[2:6], 16), int(line[7:10])
            except ValueError as exc:
                raise InputError("not an OpenSM LFT dump line", file=path, line=no) from exc
            if port > node.nports:
                raise InputError(f"port {port} out of range 0..{node.nports}", file=path, line=no)
            if lid >= len(node.lft):
                node.lft.extend([255] * (lid + 1 - len(node.lft)))
            node.lft[lid] = port
            rows += 1
            if lid not in owner and (k := line.find("portguid 0x", 13)) >= 0:
                owner[lid] = int(line[k + 11 : k + 27], 16)
                owner_line[lid] = no
        elif m := _LFT_HEAD.match(line):
            if node is not None:
                raise InputError(
                    f"the block of switch 0x{node.guid:016x} has no 'lids dumped' line: the dump is cut or garbled",
                    file=path,
                    line=no,
                )
            guid = int(m[2], 16)
            node = fabric.nodes.get(guid)
            if node is None or node.kind != "switch":
                raise InputError(f"switch 0x{guid:016x} is not in {SUBNET_LST}", file=path, line=no)
            top = int(m[1])
            node.lft = [255] * (top + 1)
            rows = 0
            seen.add(guid)
        elif _LFT_ROW.match(line):
            raise InputError("LFT row before a switch header", file=path, line=no)
        elif m := _LFT_FOOT.match(line):
            if node is None:
                raise InputError("'lids dumped' line without a switch block", file=path, line=no)
            if int(m[1]) != top or rows > top:  # OpenSM counts LIDs up to the top one
                raise InputError(
                    f"{m[1]} lids dumped, but the block of switch 0x{node.guid:016x} "
                    f"covers LIDs up to {top} in {rows} rows: the dump is garbled",
                    file=path,
                    line=no,
                )
            node = None
        else:
            raise InputError("not an OpenSM LFT dump line", file=path, line=no)
    if node is not None:
        raise InputError(
            f"ends inside the block of switch 0x{node.guid:016x} (no 'lids dumped' line): the dump is cut short",
            file=path,
            line=last,
        )
    missing = [n for n in fabric.switches() if n.guid not in seen]
    if missing:
        raise InputError(
            f"no LFT block for {len(missing)} switch(es) of {SUBNET_LST}, e.g. "
            f"0x{missing[0].guid:016x} {missing[0].desc!r}: the dump is cut short",
            file=path,
            line=last,
        )
    _owners_listed(fabric, owner, owner_line, path)
    _set_lmc(fabric, owner)


def _owners_listed(fabric: Fabric, owner: dict[int, int], owner_line: dict[int, int], path: Path) -> None:
    """Every port a row names as a LID's owner is one OpenSM knows, so one with a link, which the
    subnet list lists: one it does not is a subnet list cut at a line's end (with no SL2VL
    dump to name the port too, verify judged the smaller fabric it left, exit 0)."""
    listed = {p.guid for n in fabric.nodes.values() for p in n.ports.values() if p.guid}
    for lid, guid in owner.items():
        if guid not in listed:
            raise InputError(
                f"LID {lid} is port 0x{guid:016x}, which {SUBNET_LST} does not list: a dump is cut short",
                file=path,
                line=owner_line[lid],
            )


def _set_lmc(fabric: Fabric, owner: dict[int, int]) -> None:
    """LMC is not dumped; a port with LMC l owns 2^l consecutive LIDs in every LFT."""
    for n in fabric.nodes.values():
        for p in n.ports.values():
            if p.lid and p.guid:
                count = 1
                while owner.get(p.lid + count) == p.guid:
                    count += 1
                p.lmc = count.bit_length() - 1


def _read_sl2vl(fabric: Fabric, path: Path) -> None:
    """OpenSM writes a block for every port it knows, each with at least one row (a switch's
    linked out ports, a CA port's own): a block without rows, or a dump without blocks, is a
    dump cut at a line's end, not a fabric without SL2VL (read as every SL on VL 0)."""
    by_port_guid = {p.guid: (n, p.num) for n in fabric.nodes.values() for p in n.ports.values() if p.guid}
    target: tuple[Node, int] | None = None
    head, rows = 0, 0
    for no, line in _lines(path):
        if line.startswith("#"):
            continue
        if m := _SL2VL_HEAD.match(line):
            _sl2vl_rows_seen(path, head, rows)
            guid = int(m[2], 16)
            if guid not in by_port_guid:
                raise InputError(f"port 0x{guid:016x} is not in {SUBNET_LST}", file=path, line=no)
            target = by_port_guid[guid]
            head, rows = no, 0
        elif m := _SL2VL_ROW.match(line):
            if target is None:
                raise InputError("SL2VL row before a port header", file=path, line=no)
            rows += 1
            node, num = target
            vls = tuple(map(int, m[3].split()))
            if max(vls) > 15:
                raise InputError("VL out of range 0..15", file=path, line=no)
            key = (int(m[1]), int(m[2])) if node.kind == "switch" else (0, num)
            if max(key) > node.nports:
                raise InputError(f"port out of range 0..{node.nports}", file=path, line=no)
            node.sl2vl[key] = vls
        else:
            raise InputError("not an OpenSM SL2VL dump line", file=path, line=no)
    _sl2vl_rows_seen(path, head, rows)
    if not head:
        raise InputError("no port's SL2VL block: the dump is cut short (OpenSM writes one for every port)", file=path)


def _sl2vl_rows_seen(path: Path, head: int, rows: int) -> None:
    if head and not rows:
        raise InputError("a port's block without SL2VL rows: the dump is cut short", file=path, line=head)
