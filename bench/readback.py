"""Live read-back time (ibqos-readback) on ibsim dragonflies, against in-run baselines:
`ibnetdiscover` (topology only, one process) and one `smpquery sl2vl` call scaled to the
number of SL2VL+VLArb queries a per-port diags approach would need."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from ibqos.fabric.live import read_live
from ibqos_sim.harness import Harness
from ibqos_sim.topology import DRAGONFLY_SIZES, dragonfly


def _timed(fn):
    t0 = time.monotonic()
    out = fn()
    return time.monotonic() - t0, out


def bench_readback(sizes: list[int], log) -> list[dict]:
    rows = []
    for size in sizes:
        topo = dragonfly(*DRAGONFLY_SIZES[size])
        with tempfile.TemporaryDirectory(prefix=f"bench-rb{size}-") as tmp:
            net = topo.write_net(Path(tmp) / "fabric.net")
            with Harness(net, run_dir=Path(tmp) / "run") as h:
                h.run_sm(engine="minhop", conf={"qos": "TRUE"}, log_flags=0x03, timeout=1800)
                log(f"df{size}: read-back")
                t_read, fabric = _timed(lambda: read_live(h.env, timeout=600))
                t_disc, _ = _timed(lambda: h.diag(["ibnetdiscover"], timeout=600))
                t_one, _ = _timed(lambda: h.diag(["smpquery", "sl2vl", "1", "1"]))
            ports = sum(len(n.ports) for n in fabric.switches())
            calls = sum(len(n.ports) - 1 for n in fabric.switches()) + ports + len(list(fabric.cas())) * 2
            rows.append({"cas": size, "switches": len(topo.switches), "readback_s": round(t_read, 2),
                         "ibnetdiscover_s": round(t_disc, 2),
                         "readback/ibnetdiscover": round(t_read / t_disc, 2),
                         "smpquery_call_s": round(t_one, 4),
                         "per_port_diags_est_s": round(t_one * calls, 1),
                         "sl2vl_entries": sum(len(n.sl2vl) for n in fabric.nodes.values())})
    return rows
