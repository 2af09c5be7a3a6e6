"""infiniband-diags as the independent cross-check: read one table with `smpquery` on a
harness fabric and parse it. Tests compare these against ibqos's own read-back and the plan;
this module is the only parser of smpquery's (and saquery -g's) text in ibqos."""

from __future__ import annotations

import re
from pathlib import Path

from ibqos.errors import ExternalError
from ibqos.proc import run_command

_SL2VL_ROW = re.compile(r"^ports: in\s+(\d+), out\s+(\d+):\s*\|(.*)\|\s*$")
_FIELD = re.compile(r"^(\w+):\.+(.*)$", re.M)


def parse_sl2vl(text: str) -> dict[int, tuple[int, ...]]:
    """`smpquery sl2vl LID PORT` → in-port → 16 VLs (one row; in-port 0 on CAs)."""
    rows = {}
    for line in text.splitlines():
        if m := _SL2VL_ROW.match(line):
            rows[int(m.group(1))] = tuple(int(x) for x in m.group(3).split("|"))
    if not rows:
        raise ExternalError(f"smpquery sl2vl printed no table: {text[-200:]!r}")
    return rows


def parse_vlarb(text: str) -> dict[str, list[tuple[int, int]]]:
    """`smpquery vlarb LID PORT` → {'low': [(vl, weight)...], 'high': [...]}, cap entries each
    (a table of more than 32 entries is printed as one VL/WEIGHT pair per 32-entry block)."""
    out: dict[str, list[tuple[int, int]]] = {}
    table, vls = None, []
    for line in text.splitlines():
        if line.startswith("# Low priority"):
            table = "low"
        elif line.startswith("# High priority"):
            table = "high"
        elif line.startswith("VL") and table:
            vls = [int(x, 16) for x in line.split("|")[1:-1]]
        elif line.startswith("WEIGHT") and table:
            out.setdefault(table, []).extend(zip(vls, (int(x, 16) for x in line.split("|")[1:-1]), strict=False))
    if set(out) != {"low", "high"}:
        raise ExternalError(f"smpquery vlarb printed no tables: {text[-200:]!r}")
    return out


def parse_portinfo(text: str) -> dict[str, str]:
    """`smpquery portinfo LID PORT` → field name → value text."""
    return dict(_FIELD.findall(text))


def smpquery_sl2vl(h, lid: int, out_port: int) -> dict[int, tuple[int, ...]]:
    return parse_sl2vl(h.diag(["smpquery", "sl2vl", str(lid), str(out_port)]).stdout)


def smpquery_vlarb(h, lid: int, port: int) -> dict[str, list[tuple[int, int]]]:
    return parse_vlarb(h.diag(["smpquery", "vlarb", str(lid), str(port)]).stdout)


def smpquery_portinfo(h, lid: int, port: int) -> dict[str, str]:
    return parse_portinfo(h.diag(["smpquery", "portinfo", str(lid), str(port)]).stdout)


def saquery_ipoib_broadcast_sls(env: dict[str, str], cwd: Path) -> dict[int, int]:
    """P_Key -> SL of each IPoIB broadcast group (MGID ff12:401b:<P_Key>::ffff:ffff) the SA
    lists (`saquery -g`, MCMemberRecords of the groups OpenSM created)."""
    out: dict[int, int] = {}
    mgid = ""
    # umad2sim writes a fake sysfs into the client's working directory
    for line in run_command(["saquery", "-g"], env=env, cwd=cwd, timeout=60).stdout.splitlines():
        key, _, value = (s.strip(".") for s in line.strip().partition("."))
        if key == "MGID":
            mgid = value
        elif key == "SL" and (m := re.fullmatch(r"ff12:401b:([0-9a-f]{1,4})::ffff:ffff", mgid)):
            out[int(m[1], 16) & 0x7FFF] = int(value, 0)
    return out
