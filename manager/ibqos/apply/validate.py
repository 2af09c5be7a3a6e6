"""Checks on rendered files before they replace live ones, using the parsers of the programs
that will read them."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from pathlib import Path

from .. import paths
from ..arbiter.table import MAX_CAP, MAX_VL, MAX_WEIGHT, ArbTable
from ..errors import ExternalError, IbqosError, InputError
from ..osmconf import C_SPACE, FGETS_BYTES, cut_line, line_where, lines, parse, printable, read, to_bytes
from ..proc import run_command
from ..vls import vls_of_code


def _check_qos_values(conf: Path, shown: Path) -> None:
    """OpenSM parses qos_*_vlarb_* and qos_*_sl2vl strings only when it sets QoS up in a sweep,
    and then silently skips what it cannot read, and takes any max_op_vls: check them here."""
    for key, value in parse(read(conf)).items():
        if value == "(null)":
            continue  # OpenSM's own way to write an unset option (opensm -c)
        if re.fullmatch(r"qos(_\w+?)?_vlarb_(high|low)", key):
            try:  # the arbiter's VL:weight parser and ranges
                table: ArbTable | None = ArbTable(ArbTable.parse_entries(value, key))
            except ValueError:
                table = None
            if table is None or len(table.high) > MAX_CAP:
                raise ExternalError(
                    f"{shown}: {key}: not a list of VL:weight (VL 0-{MAX_VL}, weight 0-{MAX_WEIGHT}, at most "
                    f"{MAX_CAP}): {value!r}"
                )
        elif re.fullmatch(r"qos(_\w+?)?_sl2vl", key):
            vls = value.split(",")
            if len(vls) != 16 or not all(v.isdigit() and int(v) <= 15 for v in vls):
                raise ExternalError(f"{shown}: {key}: want 16 comma-separated VLs 0-15: {value!r}")
        elif key == "max_op_vls" and not (value.isdigit() and vls_of_code(int(value))):
            # OpenSM takes any number here and compares it with VLCap codes (osm_port.c)
            raise ExternalError(
                f"{shown}: max_op_vls: {value} is not a VLCap code 1-5 (1 = VL0, 2 = VL0-1, 3 = VL0-3, "
                "4 = VL0-7, 5 = VL0-14); it is not a count of VLs"
            )
        elif re.fullmatch(r"qos(_\w+?)?_high_limit", key) and (
            not value.lstrip("-").isdigit() or not -1 <= int(value) <= 255
        ):
            raise ExternalError(f"{shown}: {key}: want 0-255: {value!r}")


def _check_cut_lines(conf: Path, shown: Path) -> None:
    """A line longer than OpenSM's line buffer is parsed in pieces: what follows byte 1022 is a
    line of its own to OpenSM (an unknown key from a long comment, or an option set where no
    line says so), never what the file shows. Before, a long comment in a CRLF file was refused
    in a message of many lines naming no line, and ibqos read another option than OpenSM did."""
    cut = cut_line(read(conf))
    if cut is None:
        return
    line, key = cut
    size = len(to_bytes(line.rstrip("\r\n")))
    try:
        n: int | None = lines(read(shown)).index(line) + 1
    except (IbqosError, ValueError):  # no file yet, or the line is not the admin's
        n = None
    raise InputError(
        f"a line of {size} bytes: OpenSM 3.3.23 reads a line {FGETS_BYTES} "
        f"bytes at a time and takes {printable(key)[:40]!r} after byte {FGETS_BYTES} as a line of its own; "
        "shorten the line",
        file=shown,
        line=n,
    )


# log_report in osm_subn_parse_conf_file; it cuts a long message short, closing quote and all, so
# a token ends at the line's end too (it ran on into the next message's, a multi-line 'key')
_UNRECOGNIZED = re.compile(r'Unrecognized token: "([^"\n]*)')
# opts_parse_uint*/int* in osm_subnet.c, for a value strtol cannot read
_BOM = "\ufeff"  # a UTF-8 byte-order mark (an editor's), glued to the first line's first token
_PARSING = re.compile(r"-E- Parsing error in field (\S+), expected numeric input received: (.*)")


def validate_opensm_conf(conf: Path, shown: Path | None = None) -> None:
    """`opensm -F conf -c scratch` parses the file with OpenSM's own option table and exits.
    `conf` is a scratch copy of the file `shown` becomes (the admin's opensm.conf): what
    OpenSM cannot read is named at its line in `shown`, as bad input."""
    shown = shown or conf
    _check_cut_lines(conf, shown)
    _check_qos_values(conf, shown)
    opensm = paths.require_tool("opensm", "opensm")
    with tempfile.TemporaryDirectory(prefix="ibqos-osmcheck-") as tmp:
        cp = run_command([opensm, "-F", str(conf), "-c", str(Path(tmp) / "out.conf")], timeout=30, check=False)
    out = cp.stdout + cp.stderr
    for token in _UNRECOGNIZED.findall(out):
        # A blank line of a CRLF file is the token "\r" to OpenSM, a byte-order mark before a
        # comment the token BOM: harmless, and not keys.
        if token.strip(C_SPACE + _BOM):
            raise _unreadable(shown, token)
    # OpenSM reports a value it cannot read as "-E- Parsing error ..." and keeps its default,
    # exit 0: that file would run with another sweep_interval than the one verified.
    m = _PARSING.search(out)
    if m:
        key, value = m.group(1), m.group(2).strip()
        raise InputError(
            f"OpenSM cannot read {value!r} (it logs '{m.group(0).strip()}' and runs with its default)",
            file=shown,
            line=_line(shown, lambda k, v: k == key and v == value),
            field=key,
        )
    bad = [ln.strip() for ln in out.split("\n") if "ERR" in ln or "-E-" in ln]
    if cp.returncode != 0 or bad:
        raise ExternalError(f"{shown}: OpenSM rejects it: {bad[0] if bad else out.strip()[-200:]}")


def _unreadable(shown: Path, token: str) -> InputError:
    if token.startswith(_BOM):
        return InputError(
            "a UTF-8 byte-order mark before the key: OpenSM reads it as part of the key and ignores "
            "this line; save the file without it",
            file=shown,
            line=1,
            field=printable(token[len(_BOM) :]),
        )
    return InputError(
        "OpenSM 3.3.23 does not know this option (it logs 'Unrecognized token' and ignores the line): "
        "correct it, or remove it",
        file=shown,
        # a token cut short in OpenSM's message is the start of the line's key
        line=_line(shown, lambda k, _v: k == token) or _line(shown, lambda k, _v: k.startswith(token)),
        field=printable(token),
    )


def _line(shown: Path, wanted: Callable[[str, str], bool]) -> int | None:
    try:
        return line_where(read(shown), wanted)
    except IbqosError:  # a scratch file gone, or no file yet: named without a line
        return None


def validate_plugin_tables(tables: Path) -> None:
    """The plugin's own parser (plugin/, built as ibqos-tablecheck) reads the table file."""
    checker = paths.built("plugin/ibqos-tablecheck")
    cp = run_command([str(checker), str(tables)], timeout=30, check=False)
    if cp.returncode != 0:
        raise ExternalError(
            (cp.stderr or cp.stdout).strip().splitlines()[0]
            if (cp.stderr or cp.stdout).strip()
            else f"{tables}: rejected"
        )
