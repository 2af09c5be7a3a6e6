"""One dla-routed ibsim dragonfly per size: live read-back, verification and simulation timed.

Baselines measured in the same run on the same fabric: `ibnetdiscover` (one process,
topology only) for the read-back, one `smpquery` call scaled to what a per-port diags
approach needs, and the whole `opensm --once` for the verifier."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from ibqos.fabric.live import read_live
from ibqos.fabric.model import Fabric
from ibqos.verify import verify_fabric
from ibqos_sim.harness import Harness
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly
from ibqos_sim.sim.bench import measure_subprocess

# (load, warm-up µs, measured µs) per size: issue 5's setups; 72 CAs for the per-core rate.
SIM_RUNS = {72: (1.0, 100, 5000), 1056: (0.7, 0, 1000), 2550: (1.0, 1000, 5000)}


def _timed(fn):
    t0 = time.monotonic()
    out = fn()
    return time.monotonic() - t0, out


def bench_fabric(sizes: list[int], log, simulate: bool = True) -> list[dict]:
    rows = []
    for size in sizes:
        topo = dragonfly(*DRAGONFLY_SIZES[size])
        with tempfile.TemporaryDirectory(prefix=f"bench-fab{size}-") as tmp:
            net = topo.write_net(Path(tmp) / "fabric.net")
            with Harness(net, run_dir=Path(tmp) / "run") as h:
                log(f"df{size}: OpenSM with dla")
                run = h.run_sm(engine="dla,minhop", plugin=True, conf={"qos": "TRUE"}, log_flags=0x03, timeout=1800)
                log(f"df{size}: read-back")
                t_read, fabric = _timed(lambda: read_live(h.env, timeout=600))
                t_disc, _ = _timed(lambda: h.diag(["ibnetdiscover"], timeout=600))
                t_one, _ = _timed(lambda: h.diag(["smpquery", "sl2vl", "1", "1"]))
            log(f"df{size}: verify")
            t_verify, rep = _timed(lambda: verify_fabric(fabric))
            calls = (
                sum(len(n.ports) - 1 for n in fabric.switches())  # sl2vl per out port
                + sum(len(n.ports) for n in fabric.nodes.values())
            )  # vlarb per port
            # fabric.json: the pydantic model's save and load, against a bare json.loads of the
            # same file (what any loader pays at least)
            model = Path(tmp) / "fabric.json"
            t_save, _ = _timed(lambda: fabric.save(model))
            t_json, _ = _timed(lambda: json.loads(model.read_text()))
            t_load, loaded = _timed(lambda: Fabric.load(model))
            found = (len(list(fabric.cas())), len(list(fabric.switches())))
            row = {
                "cas": size,
                "switches": len(topo.switches),
                "all_discovered": found == (len(topo.cas), len(topo.switches)),
                "readback_s": round(t_read, 2),
                "ibnetdiscover_s": round(t_disc, 2),
                "readback/ibnetdiscover": round(t_read / t_disc, 2),
                "per_port_smpquery_est_s": round(t_one * calls, 1),
                "sm_once_s": round(run.wall_s, 2),
                "verify_s": round(t_verify, 2),
                "verify/sm_once": round(t_verify / run.wall_s, 2),
                "verdict": "clean" if rep.ok else "defect",
                "pairs": rep.pairs,
                "model_mb": round(model.stat().st_size / 1e6, 1),
                "model_save_s": round(t_save, 2),
                "model_load_s": round(t_load, 2),
                "json_loads_s": round(t_json, 2),
                "model_load/json_loads": round(t_load / t_json, 2) if t_json else None,
                "model_roundtrip": loaded == fabric,
            }
            if simulate and size in SIM_RUNS:
                load, warm, meas = SIM_RUNS[size]
                log(f"df{size}: simulate {meas} µs at load {load}")
                m = measure_subprocess(model, load=load, time_us=meas, warmup_us=warm)
                row.update(
                    {
                        "sim_load": load,
                        "sim_us": warm + meas,
                        "sim_wall_s": round(m["wall_s"], 1),
                        "sim_cpu_s": round(m["cpu_s"], 1),
                        "sim_Mhops_per_cpu_s": round(m["hops_per_cpu_s"] / 1e6, 2),
                        "sim_peak_mb": m["peak_rss_mb"],
                        "sim_status": m["status"],
                        "sim_accepted_pct": m["accepted_pct"],
                    }
                )
            rows.append(row)
    return rows
