"""The monitor's Prometheus metrics (documented in docs/monitor.md; names are stable).

The `_total` counters accumulate the traffic the monitor measured since it started (the
ports' own counters wrap at 32 bits, so they are not exported raw). A class's bytes are
counted only from intervals its port's per-SL counters measured whole: a share measured over a
sub-window (HDR/NDR links, docs/monitor.md "Fast links") says nothing exact of the bytes
outside it, so those intervals add to `ibqos_port_bytes_total` (64-bit counters) alone, and
`ibqos_class_share_seconds` says what each share was measured over.
"""

from __future__ import annotations

import math
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from .. import __version__
from ..docfile import JsonDoc, made_dir, write_atomic
from ..templating import render
from ..verdict import Verdict
from .judge import Judged

# the key of the --state document that keeps the totals (Sample.to_json's extra)
TOTALS = "monitor_totals"
# PortVLXmitWaitCounters counts VL0-15 (VL15 the SMPs'; counters.Sample reads 16), the arbiter VL0-14
MAX_WAIT_VL = 15


class MonitorCollector(Collector):
    def __init__(self) -> None:
        self.judged: Judged | None = None
        # keyed by (node GUID, port): node descriptions repeat (every unmanaged switch of a
        # model has the same one), so they label a series but do not identify it
        self.bytes_total: dict[tuple[int, int, str], int] = defaultdict(int)
        self.wait_total: dict[tuple[int, int, int], int] = defaultdict(int)
        self.port_total: dict[tuple[int, int], int] = defaultdict(int)
        self.samples = 0
        self.judged_at: float | None = None  # wall clock, when the last interval was judged
        # whether the last sample read the fabric (None: none tried yet), and how many did not
        # (monitor.outage: --listen serves on through them)
        self.sample_ok: bool | None = None
        self.failures = 0
        self.engine: str | None = None
        self.verdict: Verdict | None = None
        self.verdict_unreadable = False
        self.follows_opensm = False  # --opensm-conf: whether an OpenSM reads it is exported
        self.opensm_pid: int | None = None
        # the followed OpenSM's plugin, from its own record: (its release, None before it was
        # recorded; whether that is not this ibqos's, health.plugin_finding); None: no record of it
        self.plugin: tuple[str | None, bool] | None = None
        # --opensm-conf: whether this host's port is the master SM while no OpenSM reads the file
        # (health.other_config_finding); None without --opensm-conf
        self.other_config: bool | None = None
        # --opensm-conf: whether the OpenSM that reads it is not the master SM (a failover to an SM
        # on its own files, health.standby_finding); None without --opensm-conf
        self.standby: bool | None = None
        # the HTTP server's threads scrape while the sampling thread updates: a scrape sees one
        # whole interval, never the new links with the old totals or a dict growing under it
        self._lock = threading.Lock()

    def update(
        self,
        judged: Judged,
        engine: str | None = None,
        verdict: Verdict | None = None,
        *,
        verdict_unreadable: bool = False,
        opensm_pid: int | None = None,
        plugin: tuple[str | None, bool] | None = None,
        other_config: bool | None = None,
        standby: bool | None = None,
    ) -> None:
        with self._lock:
            self.plugin, self.other_config, self.standby = plugin, other_config, standby
            self._update(judged, engine, verdict, verdict_unreadable, opensm_pid)

    def read(self) -> None:
        """A sample read the fabric (the first, or one after a failed one, judges nothing yet)."""
        with self._lock:
            self.sample_ok = True

    def failed(self, opensm_pid: int | None) -> None:
        """A sample the fabric did not answer: no port was measured, so no per-port series and
        no port counts are exported until one is again, not the last interval's as if they
        were now; the totals are kept, and go on from the next interval (measured from the
        last sample that was read, so across the outage). What does not come from the fabric
        stays: whether an OpenSM reads --opensm-conf (`opensm_pid`, looked at for this
        sample), the engine, the verdict."""
        with self._lock:
            self.sample_ok = False
            self.failures += 1
            self.judged = None
            self.other_config = self.standby = None  # asked of the fabric (sminfo)
            self.opensm_pid = opensm_pid

    def _update(
        self,
        judged: Judged,
        engine: str | None,
        verdict: Verdict | None,
        verdict_unreadable: bool,
        opensm_pid: int | None,
    ) -> None:
        self.judged = judged
        self.engine = engine
        self.opensm_pid = opensm_pid
        self.verdict = verdict
        self.verdict_unreadable = verdict_unreadable
        self.sample_ok = True
        self.samples += 1
        self.judged_at = time.time()
        for link in judged.links:
            if link.sent_bytes is not None:
                self.port_total[(link.guid, link.port)] += link.sent_bytes
            for c in link.classes if link.over == "interval" else ():
                self.bytes_total[(link.guid, link.port, c.name)] += c.bytes
            for vl, ticks in link.vl_wait.items():  # every VL the port runs: 0 from the first interval
                self.wait_total[(link.guid, link.port, vl)] += ticks
        # a port gone for this interval (its link down, its switch cut off or removed) exports
        # nothing, and its totals go: kept, they grew the memory and --state with every port a
        # fabric with churn ever had. Measured again, its counters start from 0, which Prometheus
        # takes as a counter reset (rate and increase count on from it)
        here = {(link.guid, link.port) for link in judged.links}
        self.port_total = _of_ports(self.port_total, here)
        # and a class the plan no longer has (renamed or dropped, then a cron run from --state):
        # kept, its total was exported for every port, frozen, and kept in --state for good
        classes = {(link.guid, link.port, c.name) for link in judged.links for c in link.classes}
        self.bytes_total = defaultdict(int, {k: v for k, v in self.bytes_total.items() if k in classes})
        self.wait_total = _of_ports(self.wait_total, here)

    def totals_json(self) -> dict[str, Any]:
        """What the `_total` counters have counted, for --state: a run from cron (--once) goes
        on from the last one's, so node_exporter's textfile holds counters, not one interval."""
        return {
            "samples": self.samples,
            "port_bytes": [[f"0x{g:016x}", p, v] for (g, p), v in self.port_total.items()],
            "class_bytes": [[f"0x{g:016x}", p, c, v] for (g, p, c), v in self.bytes_total.items()],
            "vl_xmit_wait": [[f"0x{g:016x}", p, vl, v] for (g, p, vl), v in self.wait_total.items()],
        }

    def restore(self, doc: Any, where: str, text: str | None = None) -> None:
        """Go on from `totals_json`'s document, read back from the file `where` (its `text`,
        to name the line of a bad field)."""
        w = JsonDoc(where, text)
        try:
            samples = _count(doc["samples"])
        except (ValueError, KeyError, TypeError) as e:
            raise w.error(f"not the monitor's totals: {e}", TOTALS, "samples") from e
        ports = _entries(doc, "port_bytes", w, lambda g, p, v: ((int(g, 16), _count(p)), _count(v)))
        classes = _entries(doc, "class_bytes", w, lambda g, p, c, v: ((int(g, 16), _count(p), str(c)), _count(v)))
        waits = _entries(doc, "vl_xmit_wait", w, lambda g, p, vl, v: ((int(g, 16), _count(p), _vl(vl)), _count(v)))
        self.samples = samples
        self.port_total.update(ports)
        self.bytes_total.update(classes)
        self.wait_total.update(waits)

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            metrics = list(self._families())
        yield from metrics

    def _families(self) -> Iterator[Metric]:
        share = GaugeMetricFamily(
            "ibqos_class_share_ratio",
            "Class's share of the bytes a port sent in the last interval",
            labels=["node", "guid", "port", "class"],
        )
        util = GaugeMetricFamily(
            "ibqos_link_utilisation_ratio",
            "Port's sent bytes over its link's data rate",
            labels=["node", "guid", "port"],
        )
        viol = GaugeMetricFamily(
            "ibqos_sla_violation",
            "1: the class waited below its guaranteed share on a saturated link",
            labels=["class", "node", "guid", "port"],
        )
        seconds = GaugeMetricFamily(
            "ibqos_class_share_seconds",
            "Seconds the port's class shares and utilisation were counted over: the whole interval, "
            "or a sub-window of it where its 32-bit per-SL counters wrapped beyond recovery",
            labels=["node", "guid", "port", "over"],
        )
        j = self.judged
        # the ports of the last interval, and their labels: a port gone since (its link down,
        # its switch cut off) exports no series, not its old total as if it sent nothing now
        here: dict[tuple[int, int], list[str]] = {}
        for link in j.links if j else ():
            ids = here[(link.guid, link.port)] = [link.node, f"0x{link.guid:016x}", str(link.port)]
            if link.seconds is not None:
                seconds.add_metric([*ids, link.over], link.seconds)
            if link.utilisation is not None:
                util.add_metric(ids, link.utilisation)
            for c in link.classes:
                if c.share is not None:  # the port sent nothing: no share, not 0
                    share.add_metric([*ids, c.name], c.share)
                viol.add_metric([c.name, *ids], 1.0 if c.violation else 0.0)
        nbytes = CounterMetricFamily(
            "ibqos_class_bytes", "Bytes a port sent per class", labels=["node", "guid", "port", "class"]
        )
        for (guid, pn, name), value in self.bytes_total.items():
            if (guid, pn) in here:
                nbytes.add_metric([*here[(guid, pn)], name], value)
        wait = CounterMetricFamily(
            "ibqos_vl_xmit_wait_ticks", "PortVLXmitWait ticks per VL", labels=["node", "guid", "port", "vl"]
        )
        for (guid, pn, vl), value in self.wait_total.items():
            if (guid, pn) in here:
                wait.add_metric([*here[(guid, pn)], str(vl)], value)
        port_bytes = CounterMetricFamily(
            "ibqos_port_bytes", "Bytes a port sent (64-bit data counters)", labels=["node", "guid", "port"]
        )
        for key, value in self.port_total.items():
            if key in here:
                port_bytes.add_metric(here[key], value)
        samples = CounterMetricFamily("ibqos_monitor_samples", "Intervals the monitor has judged")
        samples.add_metric([], self.samples)
        if self.judged_at is not None:
            judged_at = GaugeMetricFamily(
                "ibqos_monitor_last_sample_timestamp_seconds", "When the monitor judged its last interval"
            )
            judged_at.add_metric([], self.judged_at)
            yield judged_at
        yield from (share, nbytes, seconds, port_bytes, wait, util, viol, samples, *self._health())
        if j is not None:  # an interval judged now: not while samples fail, nor before the first
            unmeasured = GaugeMetricFamily("ibqos_monitor_unmeasured_ports", "Link directions without per-SL counters")
            unmeasured.add_metric([], len(j.unmeasured))
            ambiguous = GaugeMetricFamily(
                "ibqos_monitor_ambiguous_ports",
                "Link directions whose per-SL counters wrapped beyond recovery and no sub-window measured",
            )
            ambiguous.add_metric([], len(j.ambiguous))
            yield from (unmeasured, ambiguous)
        if self.follows_opensm:
            running = GaugeMetricFamily(
                "ibqos_monitor_opensm_running", "1: an OpenSM reads --opensm-conf now; 0: none runs on it"
            )
            running.add_metric([], 0.0 if self.opensm_pid is None else 1.0)
            yield running
        yield from _flag(
            "ibqos_opensm_other_config",
            "1: no OpenSM reads --opensm-conf, yet this host's port is the master SM (an OpenSM on another "
            "file); 0: not",
            self.other_config,
        )
        yield from _flag(
            "ibqos_opensm_standby",
            "1: the OpenSM that reads --opensm-conf is not the master SM: another SM runs the subnet from its own "
            "files, not the plan judged against; 0: it is, or none reads the file",
            self.standby,
        )
        if self.plugin is not None:
            loaded, mismatch = self.plugin
            plugin = GaugeMetricFamily(
                "ibqos_plugin_version_mismatch",
                "1: the OpenSM followed runs another release's ibqos plugin than this ibqos (restart it); 0: the same",
                labels=["loaded", "installed"],
            )
            plugin.add_metric([loaded or "unrecorded", __version__], 1.0 if mismatch else 0.0)
            yield plugin
        if self.engine is not None:
            yield InfoMetricFamily("ibqos_routing_engine", "Routing engine in force", value={"engine": self.engine})
        yield from self._credit_loop()

    def _health(self) -> Iterator[Metric]:
        """Whether the last sample read the fabric (absent before the first), and the samples
        that did not: the `up` of the fabric behind the exporter (Prometheus's own `up` says
        only that the HTTP scrape worked, which it does through a fabric outage)."""
        if self.sample_ok is not None:
            ok = GaugeMetricFamily(
                "ibqos_monitor_last_sample_success",
                "1: the monitor's last sample read the fabric; 0: it failed (its stderr says why once)",
            )
            ok.add_metric([], 1.0 if self.sample_ok else 0.0)
            yield ok
        failures = CounterMetricFamily("ibqos_monitor_sample_failures", "Samples the fabric did not answer")
        failures.add_metric([], self.failures)
        yield failures

    def _credit_loop(self) -> Iterator[Metric]:
        """The verifier's verdict on the tables `ibqos status --live --verdict` read, and when it
        read them: nothing when there is none, or it could not judge; whether the --verdict
        file stopped being one during the run (then no verdict, not the last good one)."""
        unreadable = GaugeMetricFamily(
            "ibqos_credit_loop_verdict_unreadable",
            "1: the --verdict file is no longer a credit-loop verdict (its error is on stderr)",
        )
        unreadable.add_metric([], 1.0 if self.verdict_unreadable else 0.0)
        yield unreadable
        v = self.verdict
        if v is None:
            return
        read = GaugeMetricFamily(
            "ibqos_credit_loop_read_timestamp_seconds",
            "When the tables of the credit-loop verdict were read back (ibqos status --live --verdict)",
        )
        read.add_metric([], v.read_at)
        yield read
        if v.credit_loop is not None:
            loop = GaugeMetricFamily(
                "ibqos_credit_loop",
                "1: the verifier found a credit loop in the routing read back; 0: none",
                labels=["engine"],
            )
            loop.add_metric([v.engine or "unknown"], 1.0 if v.credit_loop else 0.0)
            yield loop


def _flag(name: str, documentation: str, value: bool | None) -> Iterator[Metric]:
    """A gauge of 1 or 0, absent while `value` is None (not known, or not asked)."""
    if value is not None:
        flag = GaugeMetricFamily(name, documentation)
        flag.add_metric([], 1.0 if value else 0.0)
        yield flag


K = TypeVar("K", bound=tuple[Any, ...])


def _of_ports(totals: dict[K, int], ports: set[tuple[int, int]]) -> dict[K, int]:
    """The totals keyed (node GUID, port, …) of `ports` only."""
    return defaultdict(int, {k: v for k, v in totals.items() if k[:2] in ports})


def _entries(doc: Any, key: str, w: JsonDoc, entry: Callable[..., tuple[K, int]]) -> dict[K, int]:
    """The totals of `doc[key]`, each list read by `entry`; the first one that is not named by
    its place in the file."""
    try:
        items = doc[key]
        if not isinstance(items, list):
            raise TypeError(f"{items!r} is not a list")
    except (KeyError, TypeError) as e:
        raise w.error(f"not the monitor's totals: {e}", TOTALS, key) from e
    out: dict[K, int] = {}
    for i, item in enumerate(items):
        try:
            k, v = entry(*item)
        except (ValueError, TypeError) as e:
            raise w.error(f"not the monitor's totals: {e}", TOTALS, key, i) from e
        out[k] = v
    return out


def _vl(v: Any) -> int:
    """A VL of PortVLXmitWaitCounters (VL0-15): a larger one was kept and exported as a series
    of every port for good (totals go with their port, not their VL)."""
    if _count(v) > MAX_WAIT_VL:
        raise ValueError(f"VL {v}: a port has VLs 0-{MAX_WAIT_VL}")
    return int(v)


def _count(v: Any) -> int:
    if type(v) is not int or v < 0:
        raise ValueError(f"{v!r} is not a count")
    return v


def registry_for(collector: MonitorCollector) -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(collector)
    return reg


def write_config(out_dir: str | Path, saturation: float, interval: float = 10.0, hold: str = "10m") -> list[Path]:
    """The alerting rules and the Grafana dashboard for these metrics (templates/), in out_dir.
    `interval`: seconds between the monitor's samples (from cron, the cron period): a monitor
    is down when it took none in three of them, never less than 10 minutes (no sample counted in
    a fixed 10 minutes fired for every monitor sampling less often)."""
    down_after = max(600, math.ceil(3 * interval))
    written = []
    with made_dir(out_dir) as out:
        for template, name in (
            ("ibqos-alerts.rules.yml.j2", "ibqos-alerts.rules.yml"),
            ("ibqos-grafana-dashboard.json.j2", "ibqos-grafana-dashboard.json"),
        ):
            write_atomic(out / name, render(template, saturation=saturation, hold=hold, down_after=down_after))
            written.append(out / name)
    return written
