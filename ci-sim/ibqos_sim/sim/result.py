"""SimResult: what a run measured, as plain data (JSON-ready)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from . import _core


@dataclass
class Latency:
    mean_us: float
    p50_us: float
    p99_us: float
    max_us: float

    @classmethod
    def of(cls, lat: _core.Latency) -> Latency:
        return cls(round(lat.mean_ps / 1e6, 4), lat.p50_ps / 1e6, lat.p99_ps / 1e6, lat.max_ps / 1e6)


@dataclass
class Throughput:
    name: str
    sl: int | None
    packets: int
    offered_gbps: float | None  # None: saturating sources
    offered_pct: float | None  # of the measured endpoints' link capacity
    accepted_gbps: float
    accepted_pct: float
    share_pct: float  # of all bytes delivered to the measured endpoints
    latency: Latency  # generation -> delivery (includes source queueing)
    net_latency: Latency  # injection -> delivery
    priority: int | None = None


@dataclass
class SimResult:
    load: float
    pattern: str
    status: str  # done | deadlock | stalled
    params: dict
    accepted_pct: float  # normalised accepted traffic, measured endpoints
    offered_pct: float | None
    per_sl: list[Throughput]
    per_class: list[Throughput]
    per_vl: dict[int, dict]  # vl -> {"mean_util_pct", "max_util_pct"}
    links: list[dict]  # per port with a link: util per direction
    deadlock: dict | None
    counters: dict
    notes: list[str] = field(default_factory=list)
    info: dict = field(default_factory=dict)

    @property
    def class_by_name(self) -> dict[str, Throughput]:
        return {c.name: c for c in self.per_class}

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, doc: dict) -> SimResult:
        """The inverse of to_json after a trip through JSON (integer keys came back as text)."""

        def tp(d: dict) -> Throughput:
            return Throughput(**{**d, "latency": Latency(**d["latency"]), "net_latency": Latency(**d["net_latency"])})

        return cls(
            **{
                **doc,
                "per_sl": [tp(x) for x in doc["per_sl"]],
                "per_class": [tp(x) for x in doc["per_class"]],
                "per_vl": {int(vl): u for vl, u in doc["per_vl"].items()},
                "links": [{**ln, "per_vl": {int(v): u for v, u in ln["per_vl"].items()}} for ln in doc["links"]],
            }
        )


# What the host measured about the run, not what the simulation computed: these differ from
# one run of the same point to the next (the machine is shared), the rest never does.
TIMING_COUNTERS = ("wall_s", "cpu_s", "hops_per_cpu_s")


def without_timing(doc: dict) -> dict:
    """A result's JSON without the host's timings: equal for equal inputs and seed."""
    return {**doc, "counters": {k: v for k, v in doc["counters"].items() if k not in TIMING_COUNTERS}}


def _witness(net, raw) -> dict:
    n = raw.witness_len
    trip = [(raw.witness[3 * i], raw.witness[3 * i + 1], raw.witness[3 * i + 2]) for i in range(n)]
    buffers, channels = [], []
    for node, port, vl in trip:
        guid = net.nodes[node]
        buffers.append(f"{net.node_desc(guid)}:{port}/{vl}")
        up = net.fabric.nodes[guid].ports[port].remote
        channels.append(f"{net.node_desc(up[0])}:{up[1]}/{vl}" if up else buffers[-1])
    return {"buffers": buffers, "cycle": channels}


def _offered_by_pair_sl(net, fs) -> dict[int, float | None]:
    """Offered Gb/s per SL when each (source, destination) pair has its own SL: a flow draws
    each message's destination uniformly from its set, so its rate splits over the SLs of its
    pairs in proportion to how many of them each SL carries (pairs without one: the flow's
    SL). None for an SL a saturating flow feeds."""
    n = net.n_endpoints
    pair_sl = net.arrays["pair_sl"].reshape(n, n)
    out: dict[int, float | None] = {}
    for k in range(fs.n_flows):
        f = fs.flows[k]
        if f.dest_mode == _core.DEST_UNIFORM:
            dests = np.delete(np.arange(n), f.src)
        else:
            dests = fs.dests[f.dest_off : f.dest_off + f.dest_len].astype(np.int64)
        sls = pair_sl[f.src, dests].astype(np.int64)
        sls[sls > 15] = f.sl
        counts = np.bincount(sls, minlength=16)
        for sl in map(int, np.nonzero(counts)[0]):
            if f.process == _core.SATURATE or (sl in out and out[sl] is None):
                out[sl] = None
            else:
                out[sl] = out.get(sl, 0.0) + f.rate_gbps * counts[sl] / len(dests)
    return out


def build_result(sim) -> SimResult:
    net, params, fs = sim.net, sim.params, sim.flowset
    raw = sim.raw
    rate = params.rate_gbps
    window_s = raw.window_ps / 1e12
    N = net.n_endpoints
    rx = np.ctypeslib.as_array(raw.ep_rx_bytes, shape=(N,)).astype(np.float64)
    measured = fs.measured if fs.measured is not None else np.arange(N)
    cap_gbps = len(measured) * rate
    measured_bytes = float(rx[measured].sum())
    total_rx = float(rx.sum())

    def gbps(nbytes: float) -> float:
        return nbytes * 8 / window_s / 1e9 if window_s else 0.0

    def row(name, sl, g, offered, priority=None) -> Throughput:
        acc = gbps(g.rx_bytes)
        return Throughput(
            name=name,
            sl=sl,
            packets=g.rx_pkts,
            offered_gbps=None if offered is None else round(offered, 4),
            offered_pct=None if offered is None else round(100 * offered / cap_gbps, 3),
            accepted_gbps=round(acc, 4),
            accepted_pct=round(100 * acc / cap_gbps, 3),
            share_pct=round(100 * g.rx_bytes / total_rx, 3) if total_rx else 0.0,
            latency=Latency.of(g.latency),
            net_latency=Latency.of(g.net_latency),
            priority=priority,
        )

    class_sl: dict[int, list[int]] = {}
    per_class = []
    for i, c in enumerate(fs.classes):
        per_class.append(row(c.name, c.sl, raw.klass[i], fs.offered_gbps.get(i), c.priority))
        class_sl.setdefault(c.sl, []).append(i)
    per_sl = []
    pair_offered = _offered_by_pair_sl(net, fs) if "pair_sl" in net.arrays else None
    for sl in range(16):
        g = raw.sl[sl]
        if not g.rx_pkts and not g.tx_pkts and sl not in class_sl:
            continue
        if pair_offered is not None:
            off = pair_offered.get(sl)
        else:
            offs = [fs.offered_gbps.get(i) for i in class_sl.get(sl, [])]
            off = None if not offs or any(o is None for o in offs) else sum(offs)
        per_sl.append(row(f"SL{sl}", sl, g, off))

    # utilisation per port and VL
    P = len(net.ports)
    pv = np.ctypeslib.as_array(raw.port_vl_bytes, shape=(P, 16)).astype(np.float64)
    peer = net.arrays["port_peer"]
    linked = np.nonzero(peer >= 0)[0]
    cap_bytes = net.arrays["port_rate_gbps"][linked] * 1e9 / 8 * window_s
    util = pv[linked] / cap_bytes[:, None] * 100 if window_s else pv[linked] * 0
    per_vl = {}
    for vl in range(16):
        if util[:, vl].any():
            per_vl[vl] = {
                "mean_util_pct": round(float(util[:, vl].mean()), 3),
                "max_util_pct": round(float(util[:, vl].max()), 3),
            }
    links = []
    for k, gp in enumerate(linked):
        guid, num = net.ports[gp]
        pg, pn = net.ports[peer[gp]]
        links.append(
            {
                "port": f"{net.node_desc(guid)}:{num}",
                "to": f"{net.node_desc(pg)}:{pn}",
                "util_pct": round(float(util[k].sum()), 3),
                "per_vl": {int(v): round(float(util[k, v]), 3) for v in np.nonzero(util[k])[0]},
            }
        )

    status = _core.STATUS[raw.status]
    deadlock = _witness(net, raw) if status in ("deadlock", "stalled") else None
    if deadlock is not None:
        deadlock["at_us"] = raw.now_ps / 1e6
        deadlock["last_move_us"] = raw.last_move_ps / 1e6
    offered_all = [fs.offered_gbps.get(i) for i in range(len(fs.classes))]
    counters = {
        "injected": raw.injected,
        "delivered": raw.delivered,
        "in_flight": raw.in_flight,
        "dropped_unrouted": raw.dropped_route,
        "dropped_vl": raw.dropped_vl,
        "packet_hops": raw.hops,
        "events": raw.events,
        "max_pending_events": raw.max_pending,
        "simulated_us": raw.now_ps / 1e6,
        "window_us": raw.window_ps / 1e6,
        "wall_s": round(sim.wall_s, 4),
        "cpu_s": round(sim.cpu_s, 4),
        "hops_per_cpu_s": round(raw.hops / sim.cpu_s) if sim.cpu_s else None,
    }
    notes = list(net.notes)
    if raw.dropped_route:
        notes.append(f"{raw.dropped_route} packets dropped: unrouted or misrouted by the LFTs")
    if raw.dropped_vl:
        notes.append(f"{raw.dropped_vl} packets dropped: SL2VL maps to a VL the port does not run")
    p = params.model_dump()
    p["rate_gbps"] = rate
    return SimResult(
        load=sim.load,
        pattern=",".join(sorted({c.pattern for c in fs.classes})),
        status=status,
        params=p,
        accepted_pct=round(100 * gbps(measured_bytes) / cap_gbps, 3),
        offered_pct=None if any(o is None for o in offered_all) else round(100 * sum(offered_all) / (N * rate), 3),
        per_sl=per_sl,
        per_class=per_class,
        per_vl=per_vl,
        links=links,
        deadlock=deadlock,
        counters=counters,
        notes=notes,
        info=fs.info,
    )
