"""The fault campaign at scale: single faults on a running OpenSM with dla (issue 10).

Per size: one daemon OpenSM (dla,minhop + plugin) on ibsim; each fault is taken down, judged
(verify + ibdmchk on the dumps), restored and checked against the pristine LFTs, exactly as
plugin/tests/test_dla_faults.py does at 42/72 CAs (ibqos_sim.campaign). Then OpenSM is
restarted with minhop alone and a sample of the same faults is re-swept there: the re-sweep
engine times ('building routing with' → 'tables configured' of the sweep after the fault) are
paired per fault, and the ratio dla/minhop is their median.
"""

from __future__ import annotations

import random
import statistics
import tempfile
from collections import Counter
from pathlib import Path

from ibqos.faultspec import ResolvedFault
from ibqos_sim.campaign import KINDS, Campaign, single_faults
from ibqos_sim.harness import Harness
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly


def sample_faults(topo, n: int | None, seed: int):
    """Every single fault, or n of them spread evenly over the four kinds (seeded)."""
    faults, _ = single_faults(topo)
    if n is None or n >= len(faults):
        return faults
    rng = random.Random(seed)
    by_kind = {k: [f for f in faults if f.short_kind == k] for k in KINDS}
    out = []
    for i, k in enumerate(KINDS):
        take = n // len(KINDS) + (i < n % len(KINDS))
        out += rng.sample(by_kind[k], min(take, len(by_kind[k])))
    return out


def _spread(faults: list[ResolvedFault], n: int) -> list[ResolvedFault]:
    """n of the faults just run, every kind represented: the minhop pairs."""
    by_kind = [[f for f in faults if f.short_kind == k] for k in KINDS]
    out: list[ResolvedFault] = []
    while len(out) < min(n, len(faults)):
        for fs in by_kind:
            if fs and len(out) < n:
                out.append(fs.pop(0))
    return out


def _hist_pct(h: Counter) -> str:
    total = sum(h.values()) or 1
    return " ".join(f"{k}:{100 * v / total:.1f}%" for k, v in sorted(h.items()))


def _mean(h: Counter) -> float | None:
    total = sum(h.values())
    return round(sum(k * v for k, v in h.items()) / total, 3) if total else None


def minhop_resweeps(h, faults, log) -> dict[str, float]:
    """Engine time of minhop's re-sweep after each fault (restored after), by fault name."""
    sm = h.start_sm(
        engine="minhop", conf={"qos": "TRUE", "sweep_interval": 1}, name="minhop", log_flags=0x07, timeout=1800
    )
    out = {}
    try:
        for f in faults:
            down = h.switch_down(f.node, sm=sm) if f.kind == "switch" else h.unlink(f.node, f.port, sm=sm)
            out[str(f)] = down.engine_seconds
            h.switch_up(f.node, sm=sm) if f.kind == "switch" else h.relink(f.node, f.port, sm=sm)
    finally:
        sm.stop()
    log(f"minhop: {len(out)} re-sweeps")
    return out


def bench_size(size: int, n: int | None, minhop_n: int, log, seed: int = 10) -> tuple[list[dict], dict]:
    topo = dragonfly(*DRAGONFLY_SIZES[size])
    faults = sample_faults(topo, n, seed)
    with tempfile.TemporaryDirectory(prefix=f"bench-faults-df{size}-") as tmp:
        net = topo.write_net(Path(tmp) / "fabric.net")
        with Harness(net, run_dir=Path(tmp) / "run", console=True) as h:
            # sweep_interval 1: a light sweep finds what a lost trap did not report
            sm = h.start_sm(
                engine="dla,minhop", plugin=True, name="dla", timeout=1800, conf={"qos": "TRUE", "sweep_interval": 1}
            )
            c = Campaign(h, sm, topo, Path(tmp))
            outcomes = []
            for i, f in enumerate(faults):
                outcomes.append(c.run([f]))
                if (i + 1) % 50 == 0:
                    log(f"df{size}: {i + 1}/{len(faults)} faults")
            sm.stop()
            paired = _spread(faults, minhop_n)
            mh = minhop_resweeps(h, paired, log)
    before = Counter(c.pristine_report.hops)
    rows = []
    for k in KINDS:
        os_ = [o for o in outcomes if o.kinds == [k]]
        if not os_:
            continue
        after: Counter[int] = Counter()
        for o in os_:
            if o.degraded.engine == "dla":
                after.update({int(h): v for h, v in o.degraded.hops.items()})
        dla_t = [o.degraded.engine_s for o in os_ if o.degraded.engine_s is not None]
        ratios = [o.degraded.engine_s / mh[o.name] for o in os_ if mh.get(o.name) and o.degraded.engine_s is not None]
        rows.append(
            {
                "cas": size,
                "kind": k,
                "tried": len(os_),
                "survived": sum(o.survived for o in os_),
                "refused": sum(o.refused for o in os_),
                "credit_loops": sum(bool(o.degraded.ibdmchk_loops or not o.degraded.cdg_acyclic) for o in os_),
                "routed_by_dla": sum(o.degraded.engine == "dla" for o in os_),
                "max_vls": max((len(o.degraded.vls_used) for o in os_ if o.degraded.engine == "dla"), default=None),
                "restored_pristine": sum(bool(o.restored and o.restored.lfts_pristine) for o in os_),
                "resweep_s_median": round(statistics.median(dla_t), 5) if dla_t else None,
                "resweep/minhop": round(statistics.median(ratios), 2) if ratios else None,
                "paired_with_minhop": len(ratios),
                "mean_hops_before": _mean(before),
                "mean_hops_after": _mean(after),
                "max_hops_after": max(after, default=None),
                "hops_before": _hist_pct(before),
                "hops_after": _hist_pct(after),
                "fault_s_mean": round(statistics.mean(o.seconds for o in os_), 3),
            }
        )
    failures = [{"fault": o.name, "problems": o.problems} for o in outcomes if not o.survived]
    return rows, {"cas": size, "faults": len(outcomes), "failures": failures, "minhop_resweeps": mh}


def bench_faults(plan: list[tuple[int, int | None]], minhop_n: int, log) -> tuple[list[dict], list[dict]]:
    rows, details = [], []
    for size, n in plan:
        log(f"df{size}: {'all' if n is None else n} single faults")
        r, d = bench_size(size, n, minhop_n, log)
        rows += r
        details.append(d)
    return rows, details
