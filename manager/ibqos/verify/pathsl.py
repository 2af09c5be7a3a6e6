"""Per-path service levels, as the SA hands them out (LASH, DFSSSP and other engines that
break credit loops by SL).

Two file formats are read:
- `saquery PR` / `saquery -p` output (blocks of `PathRecord dump:` with `slid`, `dlid`, `sl`),
  what an admin can capture on a production fabric;
- ibdmchk's `-c` file, one `<src node GUID> <dlid> <sl>` per line, which is also the format
  ibqos writes (`path-sl` in a run directory), so ibdmchk reads the same SLs we check.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..docfile import write_atomic
from ..errors import InputError
from ..fabric.index import endpoints
from ..fabric.model import Fabric
from ..inputfile import read_bytes

PortRef = tuple[int, int]  # (node GUID, port number)

PATH_SL_FILE = "path-sl"  # in a run directory: ibdmchk -c format

# ASCII digits: \\d took any Unicode digit, which neither saquery writes nor ibdmchk reads
_PR_FIELD = re.compile(r"^\s*(slid|dlid|sl)\.+\s*(0x[0-9a-fA-F]+|[0-9]+)\s*$")
_PSL_LINE = re.compile(r"^\s*(0x[0-9a-fA-F]+|[0-9]+)\s+(0x[0-9a-fA-F]+|[0-9]+)\s+([0-9]+)\s*$")


@dataclass
class PathSLs:
    """SL per (source LID, destination LID)."""

    by_lids: dict[tuple[int, int], int] = field(default_factory=dict)
    source: str = ""

    def sl_of(self, fabric: Fabric, default: int = 0) -> Callable[[PortRef, PortRef], int]:
        """A `(src, dst) -> SL` callable over (GUID, port) refs, for iter_routes."""

        def f(src: PortRef, dst: PortRef) -> int:
            slid = fabric.nodes[src[0]].ports[src[1]].lid
            dlid = fabric.nodes[dst[0]].ports[dst[1]].lid
            return self.by_lids.get((slid, dlid), default)

        return f


def _int(s: str, path: str | Path, line: int, field: str) -> int:
    """A decimal or 0x number. '05' is neither: int(s, 0) refuses it (an internal error, exit
    70, before), and C's strtoul(s, 0) reads it as octal."""
    if len(s) > 1 and s[0] == "0" and s[1] not in "xX":
        raise InputError(
            f"{s!r} is not a number ibqos reads (decimal without a leading 0, or 0x hex)",
            file=path,
            line=line,
            field=field,
        )
    return int(s, 0)


def parse_saquery(text: str, path: str | Path) -> PathSLs:
    out = PathSLs(source=f"path records: {path}")
    cur: dict[str, int] = {}
    start = 0

    def flush(no: int) -> None:
        if not cur:
            return
        missing = {"slid", "dlid", "sl"} - cur.keys()
        if missing:
            raise InputError(
                f"PathRecord without {', '.join(sorted(missing))}", file=path, line=start, field="PathRecord"
            )
        if not 0 <= cur["sl"] <= 15:
            raise InputError(f"SL {cur['sl']} out of range 0..15", file=path, line=no, field="sl")
        out.by_lids[(cur["slid"], cur["dlid"])] = cur["sl"]
        cur.clear()

    for no, line in enumerate(text.splitlines(), 1):
        if line.startswith("PathRecord dump:"):
            flush(no)
            start = no
        elif m := _PR_FIELD.match(line):
            cur[m[1]] = _int(m[2], path, no, m[1])
    flush(len(text.splitlines()))
    return out


def parse_ibdmchk_psl(text: str, path: str | Path, fabric: Fabric) -> PathSLs:
    """`<src node GUID> <dlid> <sl>` lines. A node GUID stands for every LID of that CA."""
    lids: dict[int, list[int]] = {}
    for n in fabric.nodes.values():
        lids[n.guid] = [p.lid for p in n.ports.values() if p.lid]
    out = PathSLs(source=f"path SLs: {path}")
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _PSL_LINE.match(line)
        if not m:
            raise InputError("expected '<src node GUID> <dlid> <sl>'", file=path, line=no)
        guid, dlid, sl = _int(m[1], path, no, "src node GUID"), _int(m[2], path, no, "dlid"), _int(m[3], path, no, "sl")
        if guid not in lids:
            raise InputError(f"node 0x{guid:016x} is not in the fabric", file=path, line=no, field="src node GUID")
        if sl > 15:
            raise InputError(f"SL {sl} out of range 0..15", file=path, line=no, field="sl")
        for slid in lids[guid]:
            out.by_lids[(slid, dlid)] = sl
    return out


def read_path_sls(path: str | Path, fabric: Fabric) -> PathSLs:
    """Either format, told apart by content."""
    p = Path(path)
    # saquery prints node descriptions, bytes a device reports: kept, not refused
    text = read_bytes(p, what="a path-SL file").decode("utf-8", errors="replace")
    found = parse_saquery(text, p) if "PathRecord dump:" in text else parse_ibdmchk_psl(text, p, fabric)
    if not found.by_lids:
        # every pair would fall back to one SL: under a layered engine a false credit loop
        raise InputError(
            "no path SLs in it (saquery PR records, or '<src node GUID> <dlid> <sl>' lines): did the capture fail?",
            file=p,
        )
    ca_lids = {
        p.lid + k for g, num in endpoints(fabric) for p in [fabric.nodes[g].ports[num]] for k in range(1 << p.lmc)
    }
    if not any(s in ca_lids and d in ca_lids and s != d for s, d in found.by_lids):
        # every pair would fall back to one SL, as with an empty capture
        raise InputError(
            f"none of its {len(found.by_lids)} paths joins two CA ports of this fabric "
            f"(CA LIDs {min(ca_lids, default=0)}..{max(ca_lids, default=0)}): captured on another fabric, "
            "or before the LIDs changed?",
            file=p,
        )
    return found


def format_ibdmchk_psl(path_sls: PathSLs, fabric: Fabric) -> str:
    node_of = {p.lid: n.guid for n in fabric.nodes.values() for p in n.ports.values() if p.lid}
    lines = []
    for (slid, dlid), sl in sorted(path_sls.by_lids.items()):
        if slid in node_of:
            lines.append(f"0x{node_of[slid]:016x} {dlid} {sl}")
    return "\n".join(lines) + "\n"


def write_path_sls(path: str | Path, path_sls: PathSLs, fabric: Fabric) -> Path:
    p = Path(path)
    write_atomic(p, format_ibdmchk_psl(path_sls, fabric))
    return p


def from_pairs(pairs: Iterable[tuple[int, int, int]], source: str) -> PathSLs:
    return PathSLs({(s, d): sl for s, d, sl in pairs}, source)


def from_fabric(fabric: Fabric, source: str) -> PathSLs | None:
    """The per-pair SLs a read-back model carries (`Fabric.path_sls`, asked of the SA by
    `sa_paths` when it was read), or None when it carries none."""
    return None if fabric.path_sls is None else PathSLs(dict(fabric.path_sls), source)
