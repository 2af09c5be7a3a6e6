"""The SL of each IPoIB broadcast group as the SA hands it to a joining port (`saquery -g`).

OpenSM 3.3.23 creates an `ipoib` partition's broadcast group (MGID ff12:401b:<P_Key>::ffff:ffff,
the scope nibble from the partition's `scope=`) on the partition's `sl=` once, and a heavy sweep
that re-reads a partitions file with another `sl=` finds the group and keeps it: the SL changes
when OpenSM starts again. The tables read back say nothing of it, so the SA is asked, out of
the OpenSM's port, as an admin would ask it.

On ibsim, umad2sim delivers only the first segment of a multi-segment (RMPP) answer
(docs/verify.md), so there a fabric with many groups is read in part.
"""

from __future__ import annotations

import re

from ..errors import ExternalError
from ..paths import require_tool
from ..proc import run_command
from .local_port import LocalPort

# saquery's MCMemberRecord dump: one `MGID....value` and one `SL....value` line per group
_FIELD = re.compile(r"^\s*(MGID|SL)\.+(\S+)\s*$", re.M)
_BROADCAST = re.compile(r"ff1[0-9a-f]:401b:([0-9a-f]{1,4})::ffff:ffff")


def broadcast_sls(env: dict[str, str] | None, at: LocalPort | None) -> dict[int, int]:
    """P_Key (its 15 bits) -> SL of each IPoIB broadcast group the SA lists. `at` None:
    libibumad's first port."""
    cmd = [require_tool("saquery", "infiniband-diags"), *(at.diag_args() if at is not None else ()), "-g"]
    cp = run_command(cmd, env=env, timeout=60, check=False)
    if cp.returncode != 0:
        said = (cp.stderr or cp.stdout).strip().splitlines() or ["no output"]
        raise ExternalError(f"saquery -g (the SA's multicast groups) failed, exit {cp.returncode}: {said[-1]}")
    out: dict[int, int] = {}
    mgid = None
    for m in _FIELD.finditer(cp.stdout):
        if m[1] == "MGID":
            mgid = _BROADCAST.fullmatch(m[2])
        elif mgid is not None:
            out[int(mgid[1], 16) & 0x7FFF] = int(m[2], 0)
            mgid = None
    return out
