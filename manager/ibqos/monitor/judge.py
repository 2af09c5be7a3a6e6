"""Per link and direction: each class's share of the bytes sent and its rate, the link's
utilisation and the transmit wait per VL, held against the plan.

- share: the class's bytes (its SLs, plan.sl2class) over all bytes the port sent, per SL
  counters (PortXmitDataSL; for a port never asked, the SM's, its partner's PortRcvDataSL),
  over the interval, or over the sub-window of the new sample when the 32-bit counters wrapped
  beyond recovery in the interval (counters.traffic): `over` and `seconds` say which;
- utilisation: those bytes over what the link carries in the same time at its data rate
  (width x the lane's data rate, ibqos.arbiter.rates.link_data_gbps);
- saturated: utilisation at least `saturation` (default 0.9);
- violation: on a saturated link, a class that was waiting (PortVLXmitWait on its VLs) got
  less than its guaranteed share minus the plan's tolerance (share_tolerance_pp);
- congestion: a class waiting while the link is saturated and it is not a violation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..arbiter.rates import link_data_gbps
from ..fabric.model import Fabric
from ..findings import Finding
from ..plan import Plan
from .counters import WORD, PortTraffic, Sample, SlBytes, traffic

SATURATION = 0.9


@dataclass
class ClassLoad:
    name: str
    bytes: int
    share: float | None  # of the bytes the port sent, 0..1; None when it sent none
    gbps: float
    guaranteed: float  # percent of the link, the plan's target
    wait_ticks: int | None  # on the class's VLs; None when the port was not asked
    violation: bool = False
    congested: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "class": self.name,
            "bytes": self.bytes,
            "share_pct": None if self.share is None else round(100 * self.share, 4),
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
    # VL -> ticks over the interval: every data VL the port runs (its OperationalVLs), 0
    # included, so each counter exists from the first interval; and any other VL that waited
    vl_wait: dict[int, int] = field(default_factory=dict)
    over: str = "interval"  # what shares and utilisation were counted over: "interval" or "window"
    seconds: float | None = None  # its length
    sent_bytes: int | None = None  # over the interval, from the 64-bit data counters

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "guid": f"0x{self.guid:016x}",
            "port": self.port,
            "peer": self.peer,
            "peer_port": self.peer_port,
            "source": self.source,
            "over": self.over,
            "seconds": None if self.seconds is None else round(self.seconds, 6),
            "sent_bytes": self.sent_bytes,
            "utilisation": None if self.utilisation is None else round(self.utilisation, 6),
            "saturated": self.saturated,
            "vl_xmit_wait": {str(v): t for v, t in self.vl_wait.items() if t},
            "classes": [c.to_json() for c in self.classes],
        }


@dataclass
class Judged:
    interval_s: float
    links: list[LinkLoad]
    findings: list[Finding]
    unmeasured: list[str]  # "node[port]": no per-SL counters either end
    # "node[port]": counters, but no earlier sample of them (the link came up in between)
    unbaselined: list[str] = field(default_factory=list)
    # "node[port]": per-SL counters that wrapped beyond recovery, and no sub-window measured them
    ambiguous: list[str] = field(default_factory=list)


def words_per_s(fabric: Fabric, guid: int, port: int) -> float | None:
    """The data words (octets / 4) per second the port's link carries; None when unknown."""
    node = fabric.nodes.get(guid)
    p = node.ports.get(port) if node is not None else None
    gbps = link_data_gbps(p.width, p.speed) if p is not None else None
    return gbps * 1e9 / 8 / WORD if gbps else None


def judge(plan: Plan, fabric: Fabric, old: Sample, new: Sample, saturation: float = SATURATION) -> Judged:
    interval = new.time - old.time
    if interval <= 0:
        raise ValueError(f"samples {interval:g} s apart: the later one must be newer")
    per_port: dict[tuple[int, int], PortTraffic] = {}
    for key, pc in new.ports.items():
        prev = old.ports.get(key)
        if prev is not None and not pc.skipped and not prev.skipped:
            per_port[key] = traffic(prev, pc, interval, words_per_s(fabric, *key))
    links, findings, unmeasured, unbaselined, ambiguous = [], [], [], [], []
    tol = plan.share_tolerance_pp
    plan_vls = sorted({v for c in plan.classes for v in c.vls})  # a port whose OperationalVLs are unknown
    for node in fabric.nodes.values():
        for pn, port in sorted(node.ports.items()):
            if pn == 0 or port.remote is None:
                continue
            peer_guid, peer_pn = port.remote
            peer = fabric.nodes.get(peer_guid)
            if peer is None:
                continue
            mine, theirs = per_port.get((node.guid, pn)), per_port.get((peer_guid, peer_pn))
            counted: SlBytes | None = None
            source, sent = "", None
            if mine is not None and mine.xmit_sl is not None:
                counted, source, sent = mine.xmit_sl, "xmit", mine.xmit_bytes
            elif theirs is not None and theirs.rcv_sl is not None:
                counted, source, sent = theirs.rcv_sl, "peer-rcv", theirs.rcv_bytes
            if counted is None:
                where = f"{node.desc}[{pn}]"
                if any(t is not None and t.ambiguous for t in (mine, theirs)):
                    ambiguous.append(where)
                elif _counted_now(new, (node.guid, pn), (peer_guid, peer_pn)):
                    unbaselined.append(where)  # measured from the next sample on
                else:
                    unmeasured.append(where)
                continue
            wait = mine.vl_wait if mine is not None else None
            known = range(port.op_vls) if port.op_vls else plan_vls
            sl_bytes, seconds = counted.bytes, counted.seconds
            total = sum(sl_bytes)
            gbps = link_data_gbps(port.width, port.speed)
            util = None
            if gbps and seconds > 0:
                util = min(1.0, total * 8 / (seconds * gbps * 1e9))
            saturated = util is not None and util >= saturation
            classes = []
            for c in plan.classes:
                b = sum(sl_bytes[sl] for sl in range(16) if plan.sl2class[sl] == c.index)
                w = None if wait is None else sum(wait[v] for v in c.vls if v < 16)
                share = b / total if total else None  # an idle link gives no class a share
                load = ClassLoad(c.name, b, share, b * 8 / seconds / 1e9 if seconds > 0 else 0.0, c.bandwidth.target, w)
                if saturated and w:
                    load.violation = share is not None and 100 * share < c.bandwidth.target - tol
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
                {v: t for v, t in enumerate(wait or ()) if t or v in known},
                "window" if counted.window else "interval",
                seconds,
                sent,
            )
            links.append(link)
            for load in classes:
                if load.violation:
                    findings.append(
                        Finding(
                            "sla-violation",
                            f"{node.desc}[{pn}] -> {peer.desc}[{peer_pn}]: class {load.name} got "
                            f"{100 * (load.share or 0.0):.2f}% of a saturated link while waiting "
                            f"({load.wait_ticks} ticks); guaranteed {load.guaranteed:g}%",
                            {
                                "node": node.desc,
                                "port": pn,
                                "class": load.name,
                                "share_pct": round(100 * (load.share or 0.0), 4),
                                "guaranteed_pct": load.guaranteed,
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
    if ambiguous:
        findings.append(
            Finding(
                "counters-ambiguous",
                f"{len(ambiguous)} link direction(s) whose 32-bit per-SL counters wrapped more than once "
                f"in {interval:.1f} s (the 64-bit data counters moved 2^32 words more) and no sub-window "
                f"measured them (give --window, shorter than half the wrap time at the link's rate), "
                f"e.g. {', '.join(ambiguous[:3])}",
                {"ports": ambiguous},
            )
        )
    return Judged(interval, links, findings, unmeasured, unbaselined, ambiguous)


def _counted_now(new: Sample, mine: tuple[int, int], theirs: tuple[int, int]) -> bool:
    """The direction has per-SL counters in the new sample (so the old one lacked the port)."""
    a, b = new.ports.get(mine), new.ports.get(theirs)
    return (a is not None and a.per_sl_xmit is not None) or (b is not None and b.per_sl_rcv is not None)
