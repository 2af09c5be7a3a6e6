"""VLHighLimit on ibsim: the simulator does not store it (docs/ibsim.md), so the value the
`dla` plugin set is taken from the plugin's own log line for each port."""

from __future__ import annotations

import re
from pathlib import Path

from ..fabric.model import Fabric

# "dla: port 0x0002c90300001234:5 VLHighLimit 3"
_LINE = re.compile(r"dla: port 0x([0-9a-f]{16}):(\d+) VLHighLimit (\d+)")


def limits_from_log(log: Path) -> dict[tuple[int, int], int]:
    out = {}
    for m in _LINE.finditer(log.read_text(errors="replace")):
        out[(int(m.group(1), 16), int(m.group(2)))] = int(m.group(3))
    return out


def overlay_high_limits(fabric: Fabric, log: Path) -> int:
    """Put the logged limits on the model's VLArb; returns how many ports got one."""
    limits = limits_from_log(log)
    n = 0
    for node in fabric.nodes.values():
        for p, port in node.ports.items():
            lim = limits.get((node.guid, p))
            if lim is not None and port.vlarb is not None:
                port.vlarb.high_limit = lim
                n += 1
    return n
