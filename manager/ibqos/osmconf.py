"""opensm.conf as OpenSM 3.3.23 reads it (osm_subn_parse_conf_file and
osm_subn_rescan_conf_files in opensm/osm_subnet.c): lines end at `\\n` only, and are read
1022 bytes at a time (`records`); a NUL byte ends one, a `#` anywhere starts a comment; the
key is the first token between blanks (space, tab); the value is the rest, with C isspace()
trimmed at both ends (a CRLF file's `\\r` too) and one pair of enclosing quotes removed; the
last occurrence of a key wins; `(null)` unsets a string option.

The admin's file is kept byte for byte where ibqos sets nothing: it is read as bytes (any
encoding, `\\r\\n` or `\\n`, `read`), edited line by line (`merge`) and written back with
`to_bytes`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

from .inputfile import MiB, read_bytes

_KEY = re.compile(r"[ \t\n]*([^ \t\n]+)")  # strtok_r(line, " \t\n", ...)
C_SPACE = " \t\n\v\f\r"  # C isspace() in the "C" locale: clean_val's trim
UNSET = "(null)"  # what opensm -c writes for an unset string option, and reads as NULL
# opensm -c writes 40 KB; a partitions file listing every port GUID of a large site stays
# far below this. A FIFO, a device or a 600 MB file is not a configuration file.
LIMIT = 64 * MiB


def read(path: str | Path) -> str:
    """The file's bytes as text that `to_bytes` turns back into the same bytes: no newline
    translation, and bytes that are not UTF-8 (a Latin-1 comment) kept as they are. Read
    as every input is (inputfile): a FIFO or a device is refused, never waited on or read
    without end."""
    return read_bytes(path, limit=LIMIT, what="an OpenSM configuration file").decode("utf-8", "surrogateescape")


def options(path: str | Path) -> dict[str, str]:
    """The options of the opensm.conf at `path` as OpenSM reads them; a file that cannot be
    read is bad input naming it."""
    return parse(read(path))


def to_bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def printable(text: str) -> str:
    """`text` for a terminal: a byte that is not UTF-8 shown as `\\xe9`, never an encoding error."""
    return to_bytes(text).decode("utf-8", "backslashreplace")


def lines(text: str) -> list[str]:
    """The file's lines: split after each `\\n` only (never at a `\\r` or a form feed, as
    str.splitlines would), each keeping its `\\n`. What OpenSM parses is `records`."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


# fgets(line, 1023, opts_file): a line longer than this is read in pieces of this many bytes,
# and OpenSM parses each piece as a line of its own, `#` and all: the tail of a long comment is
# a key to it ('Unrecognized token'), the tail of a long line can set an option
FGETS_BYTES = 1022


def pieces(line: str) -> list[str]:
    """`line` in the pieces fgets() returns (its bytes, not its characters, counted)."""
    raw = to_bytes(line)
    if len(raw) <= FGETS_BYTES:
        return [line]
    return [raw[i : i + FGETS_BYTES].decode("utf-8", "surrogateescape") for i in range(0, len(raw), FGETS_BYTES)]


def records(text: str) -> Iterator[tuple[int, str]]:
    """(1-based line, piece) as OpenSM parses the file: each line's `pieces`."""
    for n, line in enumerate(lines(text), 1):
        for piece in pieces(line):
            yield n, piece


def cut_line(text: str) -> tuple[str, str] | None:
    """(the line, the key OpenSM reads in a piece of it after the first) of the first line
    OpenSM reads in pieces of which a later one is no blank, or None. A piece that is a CRLF
    line's '\\r' alone is a token to OpenSM too, and harmless (as a CRLF file's blank line)."""
    for line in lines(text):
        for piece in pieces(line)[1:]:
            if (kv := key_value(piece)) and kv[0].strip(C_SPACE):
                return line, kv[0]
    return None


def key_value(line: str) -> tuple[str, str] | None:
    """(key, value) of one line as OpenSM reads it, or None for a blank or comment line. A NUL
    byte ends the line: fgets reads past it, but strchr and strtok_r stop there (a value
    'ibqos\\0 x' is 'ibqos' to OpenSM; to Python it was no plugin name, and a path no file)."""
    line = line.split("\0", 1)[0].split("#", 1)[0]
    m = _KEY.match(line)
    if not m:
        return None
    rest = line[m.end() + 1 :]  # strtok_r ends the key at its delimiter; the value is after it
    val = rest.strip(C_SPACE)
    if len(val) >= 1 and val[0] == val[-1] and val[0] in "\"'":
        val = val[1:-1]
    return m.group(1), val


def parse(text: str) -> dict[str, str]:
    out = {}
    for _, piece in records(text):
        kv = key_value(piece)
        if kv:
            out[kv[0]] = kv[1]
    return out


def line_of(text: str, key: str) -> int | None:
    """The 1-based line OpenSM takes `key` from (its last occurrence), or None."""
    found = None
    for n, piece in records(text):
        kv = key_value(piece)
        if kv and kv[0] == key:
            found = n
    return found


def line_where(text: str, wanted: Callable[[str, str], bool]) -> int | None:
    """The 1-based first line whose (key, value), as OpenSM reads them, is `wanted`, or None."""
    for n, piece in records(text):
        kv = key_value(piece)
        if kv and wanted(*kv):
            return n
    return None


def is_set(opts: dict[str, str], key: str) -> bool:
    """Whether a string option has a value OpenSM uses (not absent, empty or `(null)`)."""
    return opts.get(key, "") not in ("", UNSET)


_NUMBER = r"0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*"  # what strtoul(.., 0) reads as one number
_STRTOUL = re.compile(rf"[ \t]*[+]?({_NUMBER})")


def strtoul(value: str) -> int | None:
    """A number as OpenSM 3.3.23 reads one, strtoul(value, NULL, 0): `0x2` is 2, `010` is 8;
    None where no number starts."""
    m = _STRTOUL.match(value)
    if not m:
        return None
    text = m.group(1)
    return int(text, 16) if text[:2].lower() == "0x" else int(text, 8) if text.startswith("0") else int(text)


def whole_number(value: str) -> int | None:
    """strtoul's number where `value` is that number and nothing else (no sign, no blank, no
    tail strtoul would stop at); None otherwise."""
    return strtoul(value) if re.fullmatch(_NUMBER, value) else None


def lmc(opts: dict[str, str]) -> int:
    """The LMC OpenSM 3.3.23 runs with: a value above 7 replaced by the default 0 (checked
    with `opensm -c`)."""
    n = strtoul(opts.get("lmc", ""))
    return n if n is not None and n <= 7 else 0


LOG_ERROR = 0x01  # OSM_LOG_ERROR: log_flags' bit for the ERR lines


def merge(base: str, updates: dict[str, str], banner: str) -> str:
    """The admin's file with `updates` applied: a key already set is changed in place (so the
    admin's layout and comments stay, and the line keeps its own line ending), a new key is
    appended under a banner; every other line stays as it was, byte for byte."""
    seen = set()
    out = []
    body = lines(base)
    for line in body:
        kv = key_value(line)
        if kv and kv[0] in updates:
            key = kv[0]
            if key in seen:
                continue  # drop later duplicates: the merged value is the one
            seen.add(key)
            ending = line[len(line.rstrip("\r\n")) :] or "\n"
            out.append(f"{key} {updates[key]}{ending}")
        else:
            out.append(line)
    new = [k for k in updates if k not in seen]
    eol = "\r\n" if body and body[0].endswith("\r\n") else "\n"
    if out and not out[-1].endswith("\n"):
        out[-1] += eol
    if new:
        out += [eol, f"# ---- {banner}{eol}"] + [f"{k} {updates[k]}{eol}" for k in new]
    return "".join(out)
