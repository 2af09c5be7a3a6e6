"""Per link and direction: each class's share of the bytes sent and its rate, the link's
utilisation and the transmit wait per VL, held against the plan.

- share: the class's bytes (its SLs, plan.sl2class) over all bytes the port sent, per SL
  counters (PortXmitDataSL; for a port never asked, the SM's, its partner's PortRcvDataSL);
- utilisation: those bytes over what the link carries in the interval at its data rate
  (width x lane speed x line coding);
- saturated: utilisation at least `saturation` (default 0.9);
- violation: on a saturated link, a class that was waiting (PortVLXmitWait on its VLs) got
  less than its guaranteed share minus the plan's tolerance (share_tolerance_pp);
- congestion: a class waiting while the link is saturated and it is not a violation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..fabric.model import Fabric
from ..findings import Finding
from ..plan import Plan
from .counters import PortTraffic, Sample, traffic

SATURATION = 0.9


def link_gbps(width: str, speed: str) -> float | None:
    """Data rate of a link from PortInfo's active width and lane speed (Gb/s)."""
    try:
        lanes = int(width.rstrip("Xx"))
        lane = float(speed)
    except ValueError:
        return None
    coding = 0.8 if lane <= 10 else 64 / 66  # 8b/10b up to QDR, 64b/66b from FDR
    return lanes * lane * coding


@dataclass
class ClassLoad:
    name: str
    bytes: int
    share: float  # of the bytes the port sent, 0..1
    gbps: float
    guaranteed: float  # percent of the link, the plan's target
    wait_ticks: int | None  # on the class's VLs; None when the port was not asked
    violation: bool = False
    congested: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "class": self.name,
            "bytes": self.bytes,
            "share_pct": round(100 * self.share, 4),
            "gbps": round(self.gbps, 6),
            "guaranteed_pct": self.guaranteed,
            "wait_ticks": self.wait_ticks,
            "violation": self.violation,
            "congested": self.congested,
        }


@dataclass
class LinkLoad:
    node: str
    guid: int
    port: int
    peer: str
    peer_port: int
    source: str  # "xmit": the port's own counters; "peer-rcv": its partner's
    utilisation: float | None
    saturated: bool
    classes: list[ClassLoad]
    vl_wait: dict[int, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "guid": f"0x{self.guid:016x}",
            "port": self.port,
            "peer": self.peer,
            "peer_port": self.peer_port,
            "source": self.source,
            "utilisation": None if self.utilisation is None else round(self.utilisation, 6),
            "saturated": self.saturated,
            "vl_xmit_wait": {str(v): t for v, t in self.vl_wait.items()},
            "classes": [c.to_json() for c in self.classes],
        }


@dataclass
class Judged:
    interval_s: float
    links: list[LinkLoad]
    findings: list[Finding]
    unmeasured: list[str]  # "node[port]": no per-SL counters either end


def judge(plan: Plan, fabric: Fabric, old: Sample, new: Sample, saturation: float = SATURATION) -> Judged:
    interval = new.time - old.time
    per_port: dict[tuple[int, int], PortTraffic] = {}
    for key, pc in new.ports.items():
        prev = old.ports.get(key)
        if prev is not None and not pc.skipped and not prev.skipped:
            per_port[key] = traffic(prev, pc)
    links, findings, unmeasured = [], [], []
    tol = plan.share_tolerance_pp
    for node in fabric.nodes.values():
        for pn, port in sorted(node.ports.items()):
            if pn == 0 or port.remote is None:
                continue
            peer_guid, peer_pn = port.remote
            peer = fabric.nodes.get(peer_guid)
            if peer is None:
                continue
            mine, theirs = per_port.get((node.guid, pn)), per_port.get((peer_guid, peer_pn))
            if mine is not None and mine.xmit_sl_bytes is not None:
                sl_bytes, source = mine.xmit_sl_bytes, "xmit"
            elif theirs is not None and theirs.rcv_sl_bytes is not None:
                sl_bytes, source = theirs.rcv_sl_bytes, "peer-rcv"
            else:
                unmeasured.append(f"{node.desc}[{pn}]")
                continue
            wait = mine.vl_wait if mine is not None else None
            total = sum(sl_bytes)
            gbps = link_gbps(port.width, port.speed)
            util = None
            if gbps and interval > 0:
                util = min(1.0, total * 8 / (interval * gbps * 1e9))
            saturated = util is not None and util >= saturation
            classes = []
            for c in plan.classes:
                b = sum(sl_bytes[sl] for sl in range(16) if plan.sl2class[sl] == c.index)
                w = None if wait is None else sum(wait[v] for v in c.vls if v < 16)
                share = b / total if total else 0.0
                load = ClassLoad(
                    c.name, b, share, b * 8 / interval / 1e9 if interval > 0 else 0.0, c.bandwidth.target, w
                )
                if saturated and w:
                    load.violation = 100 * share < c.bandwidth.target - tol
                    load.congested = not load.violation
                classes.append(load)
            link = LinkLoad(
                node.desc,
                node.guid,
                pn,
                peer.desc,
                peer_pn,
                source,
                util,
                saturated,
                classes,
                {v: t for v, t in enumerate(wait or ()) if t},
            )
            links.append(link)
            for c in classes:
                if c.violation:
                    findings.append(
                        Finding(
                            "sla-violation",
                            f"{node.desc}[{pn}] -> {peer.desc}[{peer_pn}]: class {c.name} got "
                            f"{100 * c.share:.2f}% of a saturated link while waiting "
                            f"({c.wait_ticks} ticks); guaranteed {c.guaranteed:g}%",
                            {
                                "node": node.desc,
                                "port": pn,
                                "class": c.name,
                                "share_pct": round(100 * c.share, 4),
                                "guaranteed_pct": c.guaranteed,
                            },
                        )
                    )
    if unmeasured:
        findings.append(
            Finding(
                "counters-unavailable",
                f"{len(unmeasured)} link direction(s) without per-SL data counters at either end "
                f"(PortXmitDataSL/PortRcvDataSL not answered), e.g. {', '.join(unmeasured[:3])}",
                {"ports": unmeasured},
            )
        )
    return Judged(interval, links, findings, unmeasured)
