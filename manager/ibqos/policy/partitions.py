"""The policy's `partitions:` file (OpenSM's partitions.conf): read, checked, and its P_Keys
(the P_Keys a class's match names are listed by policy.load).

OpenSM parses this file only during a sweep, and on a mistake it logs `PARSE ERROR` and
drops the statement, so ibqos checks the syntax it relies on first (doc/partition-config.txt
of OpenSM 3.3.23): statements `[name][=pkey][,flags] : [members] ;`, `#` comments, members
`<GUID>|ALL|ALL_CAS|ALL_SWITCHES|ALL_ROUTERS|SELF` with `=full|limited|both`, and `mgid=`
multicast groups. The sweep itself is the second check: the dry run and `apply` fail on any
`PARSE ERROR` OpenSM logs (ibqos.osmlog).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from ..errors import InputError
from ..inputfile import MiB, read_text
from ..osmconf import strtoul, whole_number

DEFAULT_PKEY = 0x7FFF  # OpenSM always creates the Default partition
_MEMBER = re.compile(
    r"(0x[0-9a-fA-F]{1,16}|\d+|ALL|ALL_CAS|ALL_SWITCHES|ALL_ROUTERS|SELF)"
    r"(\s*=\s*(full|limited|both))?$"
)
# OpenSM compares a flag's name case-sensitively (strncmp, osm_prtn_config.c) and ignores one it
# does not know with a PARSE WARN at verbose level only: `SL=1` leaves the broadcast group on SL 0
_FLAG_NAMES = r"indx0|ipoib|defmember|rate|mtu|sl|scope|Q_Key|TClass|FlowLabel"
_DEF_FLAG = re.compile(
    r"(indx0|ipoib|defmember\s*=\s*(full|limited|both)|"
    r"(rate|mtu|sl|scope|Q_Key|TClass|FlowLabel)\s*=\s*\w+)$"
)
_FLAG_NAME_ANY_CASE = re.compile(rf"({_FLAG_NAMES})\b", re.I)
_MGID_MEMBER = re.compile(r"(?:^|[:,])\s*mgid\s*=")
# What OpenSM reads after an mgid= entry: the multicast group's own flags (parse_group_flag)
_GROUP_FLAG = re.compile(r"(rate|mtu|sl|scope|Q_Key|TClass|FlowLabel)\s*=\s*\w+$")


@dataclass
class Partitions:
    file: str
    text: str
    pkeys: dict[int, str] = field(default_factory=dict)  # P_Key (15 bits) -> name
    # P_Key -> (its sl= flag, None without one: OpenSM's default, 0; the statement's line)
    # of each partition with the `ipoib` flag: OpenSM creates its IPoIB broadcast group on it
    ipoib_sl: dict[int, tuple[int | None, int]] = field(default_factory=dict)

    def has(self, pkey: int) -> bool:
        return (pkey & 0x7FFF) in self.pkeys or (pkey & 0x7FFF) == DEFAULT_PKEY


def read_partitions(path: Path) -> Partitions:
    return partitions_of(read_text(path, limit=16 * MiB, what="a partitions.conf"), path)


def partitions_of(text: str, path: Path) -> Partitions:
    """A partitions file's text checked (errors name `path` and the line)."""
    parts = Partitions(str(path), text)
    parts.pkeys = _parse(text, path, ipoib_sl=parts.ipoib_sl)
    return parts


def pkeys_in(text: str) -> dict[int, str]:
    """The P_Keys a partitions file defines: 15-bit key -> the number as written (0x8101). A
    file this parser refuses (an admin's own, in syntax ibqos does not check) still yields
    the `=number` of every definition."""
    written: dict[int, str] = {}
    try:
        _parse(text, Path("partitions.conf"), written)
        return written
    except InputError:
        defs = (stmt.split(":", 1)[0] for stmt in re.sub(r"#.*", "", text).split(";") if ":" in stmt)
        # read as OpenSM reads a P_Key, strtoul(.., 0): '010' is 8 (int(.., 0) refused it: an
        # internal error, exit 70, in apply's P_Key guard)
        nums = ((strtoul(m), m) for d in defs for m in re.findall(r"=\s*(0[xX][0-9a-fA-F]+|[0-9]+)", d))
        return {n & 0x7FFF: m for n, m in nums if n is not None}


def _parse(
    text: str,
    path: Path,
    written: dict[int, str] | None = None,
    ipoib_sl: dict[int, tuple[int | None, int]] | None = None,
) -> dict[int, str]:
    pkeys: dict[int, str] = {}
    stmt, start = "", 1
    # OpenSM 3.3.23 reads the file with fgets, a line at a time (osm_prtn_config.c): on a PARSE
    # ERROR it drops that partition and every one after it ("not fully processed")
    for lineno, line in enumerate(text.split("\n"), 1):
        body = line.split("#", 1)[0]
        if "\r" in body:  # not one of the blanks it skips (' ', '\t', '\n')
            raise InputError(
                "a carriage return (a CRLF line end?): OpenSM 3.3.23 reads it as a character of the statement "
                "and refuses the line (PARSE ERROR), and with it every partition after it; save the file with "
                "LF line ends",
                file=path,
                line=lineno,
                field="partitions",
            )
        while body:
            if not stmt.strip():
                start = lineno
                if (first := body.partition(";")[0]).strip() and ":" not in first:
                    raise InputError(
                        f"{first.strip()[:40]!r}: OpenSM 3.3.23 reads a partition's definition, up to its ':', on "
                        "the statement's first line (else PARSE ERROR 'no partition definition found', and it "
                        "drops every partition from here on); join the lines up to the ':'",
                        file=path,
                        line=lineno,
                        field="partitions",
                    )
            head, sep, body = body.partition(";")
            if _MGID_MEMBER.search(head) and (fault := _mgid_fault(head, sep)):
                raise InputError(
                    f"an mgid= member {fault}: OpenSM 3.3.23 reads what follows an mgid= entry as the "
                    "group's flags, past the statement's end when no flag follows it, and on a PARSE ERROR "
                    "drops the whole file for its default partition; end the statement on this line with "
                    "a flag after the GID: 'mgid=GID, sl=N ;' (one mgid= per statement, its last entry)",
                    file=path,
                    line=lineno,
                    field="partitions",
                )
            stmt += head + " "
            if not sep:
                break
            _statement(stmt.strip(), path, start, pkeys, written, ipoib_sl)
            stmt = ""
    if stmt.strip():
        raise InputError(
            f"statement {stmt.strip()[:40]!r} does not end with ';'", file=path, line=start, field="partitions"
        )
    return pkeys


def _mgid_fault(head: str, sep: str) -> str | None:
    """What OpenSM 3.3.23 cannot read around an mgid= member (`head`: the statement's text on its
    line up to the ';'). An mgid= entry with no flag after it is the statement's last: its
    parser then hands the bytes *after* the statement's end to the group's flags (the rest of
    the line, or what an earlier line left in its buffer: osm_prtn_config.c, mgroup_create at
    p+ret), a PARSE ERROR or not by those bytes (seen with OpenSM: 'mgid=GID ;' then a
    statement, 'mgid=GID;# comment'); with a flag after it ('mgid=GID, sl=1 ;') it is read."""
    if not sep:
        return "whose statement does not end on its line"
    if re.search(r"mgid\s*=\s*[^,]*$", head):
        return "without a flag after it"
    return None


def _statement(
    stmt: str,
    path: Path,
    line: int,
    pkeys: dict[int, str],
    written: dict[int, str] | None = None,
    ipoib_sl: dict[int, tuple[int | None, int]] | None = None,
) -> None:
    def fail(msg: str) -> NoReturn:
        raise InputError(msg, file=path, line=line, field="partitions")

    if not stmt:
        return
    if ":" not in stmt:
        fail(f"{stmt[:40]!r}: want '<name>=<pkey> : <members> ;'")
    definition, members = (s.strip() for s in stmt.split(":", 1))
    name, *flags = (f.strip() for f in definition.split(","))
    sl = None
    for f in flags:
        if (n := _flag(f, _DEF_FLAG, "partition flag", fail)) is not None:
            sl = n
    if "=" in name:
        name, _, num = (s.strip() for s in name.partition("="))
        shown = num if len(num) <= 20 else num[:20] + "…"
        # as OpenSM reads it, strtoul(.., 0): 010 is 8 (int(.., 0) refused it as no number)
        pkey = whole_number(num)
        if pkey is None:
            fail(f"P_Key {shown!r} is not a number (use 0x... for hex)")
        if not pkey & 0x7FFF > 0 or pkey > 0xFFFF:
            fail(f"P_Key {shown} is out of range (0x0001-0x7fff)")
        if (pkey & 0x7FFF) in pkeys and pkeys[pkey & 0x7FFF] != name:
            fail(f"P_Key {shown} is already partition {pkeys[pkey & 0x7FFF]!r}; P_Keys are unique")
        pkeys[pkey & 0x7FFF] = name
        if written is not None:
            written[pkey & 0x7FFF] = num
        # OpenSM creates the broadcast group at the first `ipoib` statement of a P_Key and
        # keeps it: a later statement's sl= does not move it
        if ipoib_sl is not None and "ipoib" in flags and (pkey & 0x7FFF) not in ipoib_sl:
            ipoib_sl[pkey & 0x7FFF] = (sl, line)
    entries = [x.strip() for x in members.split(",")]
    for k, m in enumerate(entries):
        if re.match(r"mgid\s*=", m):  # OpenSM's name is 'mgid' exactly: MGID= is a bad PortGUID
            _group_flags(entries[k + 1 :], fail)
            return
        if m and not _MEMBER.match(m):
            # a flag here too: OpenSM reads every entry before an mgid= as a port (PARSE ERROR
            # 'bad PortGUID' for 'sl=1', and every partition from here on is dropped)
            fail(
                f"member {m!r}: want a port GUID, ALL, ALL_CAS, ALL_SWITCHES, ALL_ROUTERS or SELF, optionally "
                "=full|limited|both (OpenSM 3.3.23 reads any other entry as a bad PortGUID, a PARSE ERROR; "
                "partition flags go before the ':', a multicast group's after its 'mgid=GID')"
            )


def _flag(f: str, allowed: re.Pattern[str], what: str, fail: Callable[[str], NoReturn], known: str = "") -> int | None:
    """One flag checked as OpenSM 3.3.23 reads it (names compared case-sensitively, an unknown
    one ignored); its sl= value, None for any other flag."""
    if not allowed.match(f):
        if (near := _FLAG_NAME_ANY_CASE.match(f)) and allowed.match(
            spelt := next(n for n in _FLAG_NAMES.split("|") if n.lower() == near[1].lower()) + f[len(near[1]) :]
        ):
            fail(
                f"unknown {what} {f!r}: OpenSM reads flag names case-sensitively and would ignore this one; "
                f"write {spelt!r}"
            )
        fail(f"unknown {what} {f!r}{known}")
    key, _, value = (s.strip() for s in f.partition("="))
    if key != "sl":
        return None
    # as OpenSM reads it, strtoul(.., 0) to the end: sl=03 is 3, sl=0x1 is 1
    sl = whole_number(value)
    if sl is None or not 0 <= sl <= 15:
        fail(f"sl={value}: an SL is 0-15 (OpenSM reads it as C does, 0x.. hex, 0.. octal)")
    return sl


def _group_flags(flags: list[str], fail: Callable[[str], NoReturn]) -> None:
    """What follows an mgid= entry: OpenSM 3.3.23 reads every entry up to the statement's end as
    a flag of that multicast group (osm_prtn_config.c, parse_mgroup_flags) and ignores one it
    does not know with a PARSE WARN at verbose level only."""
    for f in filter(None, flags):
        if re.match(r"mgid\s*=", f):
            fail(
                f"a second mgid= entry {f!r} in one statement: OpenSM 3.3.23 reads it as a flag of the first "
                "group and creates no group for it; give each group a statement of its own"
            )
        if _MEMBER.match(f):
            # seen with OpenSM: 'PARSE WARN: unrecognized mgroup flag 'ALL' - ignored', the
            # partition left without that member (no port's P_Key table holds it)
            fail(
                f"member {f!r} after an mgid= entry: OpenSM 3.3.23 reads what follows mgid= as the group's "
                "flags and ignores this one, so the port is no member of the partition; list the members "
                "before the mgid= entry"
            )
        _flag(
            f,
            _GROUP_FLAG,
            "multicast group flag",
            fail,
            ": OpenSM 3.3.23 would ignore it; a group takes rate, mtu, sl, scope, Q_Key, TClass and FlowLabel",
        )


def pkey_range(text: str) -> range:
    """The P_Keys of a policy's canonical P_Key text (`0xa01`, `0xa01-0xa02`), as written."""
    lo, _, hi = text.partition("-")
    return range(int(lo, 16), int(hi or lo, 16) + 1)


def missing_pkeys(parts: Partitions, text: str) -> list[int]:
    return [k for k in pkey_range(text) if not parts.has(k)]
