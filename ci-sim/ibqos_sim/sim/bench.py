"""Bench entry points for `make bench` (bench/run.py calls these).

    from ibqos_sim.sim.bench import measure, measure_subprocess
    measure(fabric, load=0.7, time_us=1000)            # in this process
    measure_subprocess("run/fabric.json", load=1.0, time_us=5000, warmup_us=1000)  # + peak RSS

Both return a dict: packet_hops, events, wall_s, cpu_s, hops_per_cpu_s, hops_per_wall_s,
accepted_pct, status, endpoints; measure_subprocess adds peak_rss_mb (the child's VmHWM,
which includes loading and compiling the model).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
from pathlib import Path

from ibqos.fabric.model import Fabric
from ibqos.proc import run_command

from .network import compile_network
from .overlay import overlay_round_robin_vlarb
from .params import SimParams
from .run import Simulation
from .traffic import TrafficSpec


def measure(
    fabric: Fabric,
    *,
    load: float = 1.0,
    time_us: float = 1000.0,
    warmup_us: float = 0.0,
    pattern: str = "uniform",
    voq: bool = True,
    rate: str | float = "QDR",
    seed: int = 1,
) -> dict:
    """One uniform-traffic run (seed 003 §5: QDR, 4 KB MTU, 16 packets per VL)."""
    if any(
        p.vlarb is None and p.remote and (p.op_vls or 1) > 1 for n in fabric.nodes.values() for p in n.ports.values()
    ):
        overlay_round_robin_vlarb(fabric)  # OpenSM dumps carry no VLArb
    params = SimParams(rate=rate, voq=voq, warmup_us=warmup_us, time_us=time_us, seed=seed)
    net = compile_network(fabric, rate_gbps=params.rate_gbps, source=fabric.source or "fabric")
    with Simulation(net, TrafficSpec(pattern=pattern), params, load) as sim:
        sim.run()
        res = sim.result()
    c = res.counters
    return {
        "endpoints": net.n_endpoints,
        "load": load,
        "simulated_us": c["simulated_us"],
        "status": res.status,
        "accepted_pct": res.accepted_pct,
        "packet_hops": c["packet_hops"],
        "events": c["events"],
        "wall_s": c["wall_s"],
        "cpu_s": c["cpu_s"],
        "hops_per_cpu_s": c["hops_per_cpu_s"],
        "hops_per_wall_s": round(c["packet_hops"] / c["wall_s"]) if c["wall_s"] else None,
    }


def measure_subprocess(fabric_json: str | Path, *, timeout: float = 1800, **kw) -> dict:
    """measure() in a fresh interpreter, so its peak RSS is the simulation's own."""
    args = [sys.executable, "-m", "ibqos_sim.sim.bench", str(fabric_json)]
    for k, v in kw.items():
        args += [f"--{k.replace('_', '-')}", str(v)]
    cp = run_command(args, timeout=timeout)
    doc: dict = json.loads(cp.stdout.strip().splitlines()[-1])
    return doc


def _peak_rss_mb() -> float:
    """This process's peak RSS. Not ru_maxrss: Linux carries that across execve, so a child
    forked from a large parent would report the parent's size."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m ibqos_sim.sim.bench")
    ap.add_argument("fabric_json")
    ap.add_argument("--load", type=float, default=1.0)
    ap.add_argument("--time-us", type=float, default=1000.0)
    ap.add_argument("--warmup-us", type=float, default=0.0)
    ap.add_argument("--pattern", default="uniform")
    ap.add_argument("--voq", default="True")
    ap.add_argument("--rate", default="QDR")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    out = measure(
        Fabric.load(a.fabric_json),
        load=a.load,
        time_us=a.time_us,
        warmup_us=a.warmup_us,
        pattern=a.pattern,
        voq=a.voq.lower() in ("1", "true", "yes"),
        rate=a.rate,
        seed=a.seed,
    )
    out["peak_rss_mb"] = _peak_rss_mb()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
