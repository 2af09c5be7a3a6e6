"""VLHighLimit on ibsim: the simulator does not store it (docs/ibsim.md), so the dry run uses
the value the SM sent: the `dla` plugin's per-port log line when there is one, otherwise
OpenSM's qos_{ca,swe,sw0}_high_limit (falling back to qos_high_limit) for the port's type."""

from __future__ import annotations

import re
from pathlib import Path

from ..fabric.model import Fabric
from ..osmconf import parse

# "dla: port 0x0002c90300001234:5 VLHighLimit 3"
_LINE = re.compile(r"dla: port 0x([0-9a-f]{16}):(\d+) VLHighLimit (\d+)")


def limits_from_log(log: Path) -> dict[tuple[int, int], int]:
    out = {}
    for m in _LINE.finditer(log.read_text(errors="replace")):
        out[(int(m.group(1), 16), int(m.group(2)))] = int(m.group(3))
    return out


def _limit_for_type(opts: dict[str, str], prefix: str) -> int | None:
    for key in (f"qos_{prefix}_high_limit", "qos_high_limit"):
        if opts.get(key, "").lstrip("-").isdigit() and int(opts[key]) >= 0:
            return int(opts[key])
    return None


def overlay_high_limits(fabric: Fabric, log: Path, conf: Path) -> tuple[int, int]:
    """Put the limits the SM sent on the model's VLArb. Returns (ports from the plugin's log,
    ports from OpenSM's options)."""
    logged = limits_from_log(log)
    opts = parse(conf.read_text())
    from_log = from_conf = 0
    for node in fabric.nodes.values():
        for p, port in node.ports.items():
            if port.vlarb is None:
                continue
            lim = logged.get((node.guid, p))
            if lim is not None:
                from_log += 1
            else:
                lim = _limit_for_type(opts, "ca" if node.kind == "ca" else "sw0" if p == 0 else "swe")
                if lim is None:
                    continue
                from_conf += 1
            port.vlarb.high_limit = lim
    return from_log, from_conf
