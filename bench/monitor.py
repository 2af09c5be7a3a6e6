"""`ibqos monitor`'s cost: one full PMA sample of a dla-routed dragonfly (issue 23: <= 5 s at
2550 CAs), beside per-port `perfquery` on the same fabric in the same run.

perfquery is one process per port and attribute; it is timed on a subset of ports (every
SUBSET-th CA port, never the SM's: perfquery would kill OpenSM on Debian's ibsim,
docs/monitor.md) for the four attributes the monitor reads, and extrapolated to the ports the
monitor sampled.

The sample is taken as `ibqos monitor` takes it by default (a 0.05 s per-SL sub-window per
port, docs/monitor.md "Fast links") and, in the same run, without the sub-window (`--window 0`):
their ratio is the sub-window's cost."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from ibqos.fabric.live import sample_live
from ibqos.monitor.counters import Sample
from ibqos_sim.harness import Harness, sm_node_name
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly

SUBSET = 20  # perfquery'd ports
WINDOW = 0.05  # ibqos monitor's default --window
PERFQUERY_ATTRS = (["--xmtsl"], ["--rcvsl"], ["--vlxmitcounters"], ["-x"])


def bench_monitor(sizes: list[int], log) -> list[dict]:
    rows = []
    for size in sizes:
        topo = dragonfly(*DRAGONFLY_SIZES[size])
        with tempfile.TemporaryDirectory(prefix=f"bench-mon{size}-") as tmp:
            net = topo.write_net(Path(tmp) / "fabric.net")
            with Harness(net, run_dir=Path(tmp) / "run", ibsim="auto") as h:
                log(f"df{size}: OpenSM with dla")
                h.run_sm(engine="dla,minhop", plugin=True, conf={"qos": "TRUE"}, log_flags=0x03, timeout=1800)
                log(f"df{size}: monitor samples, with and without the sub-window")
                # alternated, median of two each: the first sample after OpenSM's sweep is slower
                times: dict[float, list[float]] = {WINDOW: [], 0: []}
                for window in (0, WINDOW, 0, WINDOW):
                    t0 = time.monotonic()
                    fabric, text = sample_live(h.env, timeout=600, window=window)
                    times[window].append(time.monotonic() - t0)
                    if window:
                        sample = Sample.from_json(text)
                t_sample, t_plain = (statistics.median(times[w]) for w in (WINDOW, 0))
                answered = sum(1 for p in sample.ports.values() if p.per_sl_xmit is not None)
                sm = sm_node_name(h.netfile)
                cas = [n for n in fabric.cas() if n.desc != sm]
                picked = cas[:: max(1, len(cas) // SUBSET)][:SUBSET]
                log(f"df{size}: perfquery on {len(picked)} ports")
                t0 = time.monotonic()
                for n in picked:
                    lid = n.ports[1].lid
                    for attr in PERFQUERY_ATTRS:
                        h.diag(["perfquery", *attr, str(lid), "1"], timeout=60)
                t_pq = time.monotonic() - t0
            per_port = t_pq / len(picked)
            est = per_port * len(sample.ports)
            rows.append(
                {
                    "cas": size,
                    "ibsim": h.binary.kind,
                    "ports_sampled": len(sample.ports),
                    "ports_with_per_sl": answered,
                    "monitor_sample_s": round(t_sample, 2),
                    "no_window_s": round(t_plain, 2),
                    "window/no_window": round(t_sample / t_plain, 2),
                    "mads": _mads(sample),
                    "under_5s": t_sample <= 5.0,
                    "perfquery_ports_timed": len(picked),
                    "perfquery_s_per_port": round(per_port, 3),
                    "perfquery_all_ports_est_s": round(est, 1),
                    "perfquery/monitor": round(est / t_sample, 1),
                }
            )
    return rows


def _mads(sample: Sample) -> int:
    """PMA Gets of the sample: four per asked port, one more per sub-window read."""
    asked = [p for p in sample.ports.values() if not p.skipped]
    return 4 * len(asked) + sum((p.xmit_window is not None) + (p.rcv_window is not None) for p in asked)
