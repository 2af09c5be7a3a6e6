"""Cross-check with ibdmchk (Debian ibutils), an independent credit-loop checker.

ibdmchk reads OpenSM's subnet, unicast and multicast dumps itself. SL2VL it takes from its
own `-d` file format, written here from the fabric model, one line per switch (in, out) pair:
`0x<switch GUID> <in> <out> 0x<VL sl0><VL sl1> 0x<sl2><sl3> ...` (8 bytes of VL nibbles).
Path SLs go in its `-c` file (`<src node GUID> <dlid> <sl>`, see pathsl.py).

ibdmchk segfaults at exit after printing its report (exit 139 in every case tried), so the
verdict comes from its output, never from its exit code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..docfile import write_atomic
from ..errors import ExternalError
from ..fabric.model import Fabric
from ..paths import require_tool
from ..proc import run_command
from .pathsl import PathSLs, write_path_sls

NO_LOOPS = "-I- no credit loops found"
LOOPS = "-E- credit loops in routing"
_ANALYZING = re.compile(r"-I- Analyzing Fabric for Credit Loops (\d+) SLs, (\d+) VLs used")
_LOOP_LINE = re.compile(r"(?:Found credit loop on|- BT credit loop through): S([0-9a-fA-F]+)/U\d+/P(\d+) VL: (\d+)")
_HIST_HEAD = "CA to CA : LFT ROUTE HOP HISTOGRAM"
_HIST_ROW = re.compile(r"^\s+(\d+)\s+(\d+)\s*$")


@dataclass
class IbdmchkResult:
    credit_loops: bool
    sls: int | None = None
    vls: int | None = None
    loop: list[tuple[int, int, int]] = field(default_factory=list)  # (switch GUID, port, VL)
    hop_histogram: dict[int, int] = field(default_factory=dict)  # CA-to-CA links -> pairs
    output: str = ""


def format_slvl(fabric: Fabric) -> str:
    lines = []
    for sw in sorted(fabric.switches(), key=lambda n: n.guid):
        for (i, o), vls in sorted(sw.sl2vl.items()):
            nibbles = " ".join(f"0x{vls[2 * k]:x}{vls[2 * k + 1]:x}" for k in range(8))
            lines.append(f"0x{sw.guid:016x} {i} {o} {nibbles}")
    return "\n".join(lines) + "\n"


def parse_output(text: str) -> IbdmchkResult:
    if NO_LOOPS in text:
        res = IbdmchkResult(credit_loops=False)
    elif LOOPS in text:
        res = IbdmchkResult(credit_loops=True)
    else:
        tail = " | ".join(text.strip().splitlines()[-3:])
        raise ExternalError(f"ibdmchk gave no credit-loop verdict: {tail or '(no output)'}")
    res.output = text
    if m := _ANALYZING.search(text):
        res.sls, res.vls = int(m[1]), int(m[2])
    res.loop = [(int(g, 16), int(p), int(v)) for g, p, v in _LOOP_LINE.findall(text)]
    in_hist = False
    for line in text.splitlines():
        if _HIST_HEAD in line:
            in_hist = True
        elif in_hist and (m := _HIST_ROW.match(line)):
            res.hop_histogram[int(m[1])] = int(m[2])
        elif in_hist and line.startswith("-----") and res.hop_histogram:
            break
    return res


def run_ibdmchk(
    dumps: str | Path, fabric: Fabric, workdir: str | Path, *, path_sls: PathSLs | None = None, timeout: float = 1800
) -> IbdmchkResult:
    """Run ibdmchk on OpenSM's dumps in `dumps` with SL2VL (and path SLs) from the model."""
    exe = require_tool("ibdmchk", "ibutils")
    # ibdmchk runs in `work`: relative paths would be read from there, not from here
    dumps, work = Path(dumps).absolute(), Path(workdir).absolute()
    work.mkdir(parents=True, exist_ok=True)
    subnet, fdbs, mcfdbs = dumps / "opensm-subnet.lst", dumps / "opensm.fdbs", dumps / "opensm.mcfdbs"
    for f in (subnet, fdbs):
        if not f.is_file():
            raise ExternalError(f"{f} is missing: ibdmchk needs OpenSM's -D 0x43 dumps")
    if not mcfdbs.is_file():  # no multicast groups: an empty file is accurate
        mcfdbs = work / "opensm.mcfdbs"
        write_atomic(mcfdbs, "")
    slvl = work / "ibdmchk-slvl"
    write_atomic(slvl, format_slvl(fabric))
    cmd = [str(exe), "-s", str(subnet), "-f", str(fdbs), "-m", str(mcfdbs), "-d", str(slvl)]
    if path_sls is not None:
        cmd += ["-c", str(write_path_sls(work / "ibdmchk-path-sl", path_sls, fabric))]
    cp = run_command(cmd, cwd=work, timeout=timeout, check=False)
    text = cp.stdout + cp.stderr
    write_atomic(work / "ibdmchk.out", text)
    return parse_output(text)
