"""Change a switch's tables behind OpenSM's back, as a switch reset, a second SM or a hand
`ibsim-smp-rw` would: one LFT entry or one SL2VL table, by directed route from the harness's
CA (ci-sim/ibsim-patch/smp_rw.c). OpenSM 3.3.23 sends an LFT block or SL2VL table only where
its own copy differs from what it computes, so an entry changed this way stays, heavy sweeps
included, until the test writes it back."""

from __future__ import annotations

import re
from collections import deque

from ibqos import paths
from ibqos.fabric.model import Fabric


def _tool() -> str:
    return str(paths.build_dir() / "ci-sim/ibsim-patch/ibsim-smp-rw")


def dr_paths(h, fabric: Fabric) -> dict[int, str]:
    """Node GUID -> directed route from the harness's CA (through switches only)."""
    me = int(re.search(r"^Guid:\.*(0x[0-9a-f]+)", h.diag(["smpquery", "nodeinfo", "-D", "0"]).stdout, re.M)[1], 16)
    hops: dict[int, list[int]] = {me: [0]}
    todo = deque([me])
    while todo:
        guid = todo.popleft()
        if guid != me and fabric.nodes[guid].kind != "switch":
            continue
        for port in fabric.nodes[guid].ports.values():
            if port.remote and port.remote[0] not in hops:
                hops[port.remote[0]] = [*hops[guid], port.num]
                todo.append(port.remote[0])
    return {guid: ",".join(map(str, route)) for guid, route in hops.items()}


def lft_entry(h, dr: str, lid: int, out_port: int | None = None) -> int:
    """The switch's LFT entry for `lid`, set to `out_port` first when given."""
    extra = [] if out_port is None else [str(out_port)]
    return int(h.diag([_tool(), dr, "0", "lft", str(lid), *extra]).stdout)


def sl2vl(h, dr: str, in_port: int, out_port: int, table: str | None = None) -> str:
    """The switch's SL2VL table for (in_port, out_port), 16 hex digits (VL of SL 0..15), set
    to `table` first when given."""
    extra = [] if table is None else [table]
    return h.diag([_tool(), dr, str(out_port), "sl2vl", str(in_port), *extra]).stdout.strip()
