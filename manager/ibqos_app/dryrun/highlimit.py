"""VLHighLimit on Debian's ibsim: it does not store it (docs/ibsim.md; the patched ibsim
does), so the dry run puts on the model the value the SM sent: the dla plugin's record
(`ibqos-dla.json`) for the ports it programmed, otherwise OpenSM's
qos_{ca,swe,sw0}_high_limit (falling back to qos_high_limit) for the port's type. An
explicit, labelled overlay step: the note says how many ports came from where."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ibqos.fabric.dla_record import DlaRecord
from ibqos.fabric.model import Fabric
from ibqos.osmconf import parse


def _limit_for_type(opts: dict[str, str], prefix: str) -> int | None:
    for key in (f"qos_{prefix}_high_limit", "qos_high_limit"):
        if opts.get(key, "").lstrip("-").isdigit() and int(opts[key]) >= 0:
            return int(opts[key])
    return None


def overlay_high_limits(fabric: Fabric, record: DlaRecord | None, conf: Path) -> tuple[int, int]:
    """Put the limits the SM sent on the model's VLArb. Returns (ports from the plugin's
    record, ports from OpenSM's options)."""
    sent = record.high_limits() if record and not record.refused else {}
    opts = parse(conf.read_text())
    from_record = from_conf = 0
    for node in fabric.nodes.values():
        for p, port in node.ports.items():
            if port.vlarb is None:
                continue
            lim = sent.get((node.guid, p))
            if lim is not None:
                from_record += 1
            else:
                lim = _limit_for_type(opts, "ca" if node.kind == "ca" else "sw0" if p == 0 else "swe")
                if lim is None:
                    continue
                from_conf += 1
            port.vlarb = dataclasses.replace(port.vlarb, limit=lim)
    return from_record, from_conf
