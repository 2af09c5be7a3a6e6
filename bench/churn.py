"""Churn after a fault (issue 25): what each engine changes in the LFTs when one link or one
switch fails under a running OpenSM, against the entries whose routes crossed the fault.

Per size and engine: one daemon OpenSM on ibsim; for each fault (the same seeded sample for
every engine) the pristine dumps, OpenSM's SMP count, the fault, the re-sweep, the dumps and
the count again, then the repair and its re-sweep. Measured per fault:

- entries: (switch, LID) LFT entries that differ from the pristine ones (switches that
  survive); blocks: the 64-entry LFT blocks holding them (OpenSM writes whole blocks);
- crossed: the pristine entries whose route, followed from that switch, used the failed
  link (either way) or entered the failed switch; direct: those whose own output is the
  failed link or leads into the failed switch, the entries that must change whatever the
  engine does upstream; collateral: changed entries whose route did not cross the fault;
- smps: QP0 SMPs OpenSM sent in the re-sweep (its SMInfo ActCount, by sminfo, before and after);
- resweep_s: wall time of the re-sweep, from the first line OpenSM logged after the fault to
  SUBNET UP.
"""

from __future__ import annotations

import random
import re
import statistics
import tempfile
from pathlib import Path

from ibqos.fabric.churn import crossed_entries, lft_changes
from ibqos.fabric.dumps import load_dumps
from ibqos.fabric.model import Fabric
from ibqos.faultspec import ResolvedFault
from ibqos_sim.campaign import single_faults
from ibqos_sim.harness import Harness
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly

ENGINES = {"dla": ("dla,minhop", True), "minhop": ("minhop", False), "dfsssp": ("dfsssp", False)}
KINDS = {"link": ("local", "global"), "switch": ("switch",)}


def pick_faults(topo, per_kind: int, seed: int = 25) -> list[tuple[str, ResolvedFault]]:
    """per_kind faults of each kind: switch-to-switch links (local and global alternating)
    and switches, seeded, the same for every engine."""
    faults, _ = single_faults(topo)
    rng = random.Random(seed)
    out = []
    for kind, subkinds in KINDS.items():
        pools = [[f for f in faults if f.short_kind == k] for k in subkinds]
        for i in range(per_kind):
            pool = pools[i % len(pools)]
            out.append((kind, pool.pop(rng.randrange(len(pool)))))
    return out


def smps_sent(h: Harness) -> int:
    """OpenSM's QP0 SMPs sent so far: the ActCount of its SMInfo."""
    out = h.diag(["sminfo"]).stdout
    m = re.search(r"activity count (\d+)", out)
    if not m:
        raise RuntimeError(f"no activity count in sminfo's answer: {out!r}")
    return int(m.group(1))


def _apply(h, sm, f: ResolvedFault, down: bool):
    if f.short_kind == "switch":
        return (h.switch_down if down else h.switch_up)(f.node, sm=sm, timeout=600)
    return (h.unlink if down else h.relink)(f.node, f.port, sm=sm, timeout=600)


def _reflected(fabric: Fabric, f: ResolvedFault) -> bool:
    node = next((n for n in fabric.nodes.values() if n.desc == f.node), None)
    if f.short_kind == "switch":
        return node is None
    return node is not None and (f.port not in node.ports or node.ports[f.port].remote is None)


def measure_engine(h: Harness, engine: str, faults: list[tuple[str, ResolvedFault]], log) -> list[dict]:
    spec, plugin = ENGINES[engine]
    sm = h.start_sm(engine=spec, plugin=plugin, name=engine, conf={"qos": "TRUE"}, timeout=1800)
    rows = []
    try:
        pristine = load_dumps(sm.dumps, require_sl2vl=False)
        for kind, f in faults:
            crossed, direct = crossed_entries(pristine, f)
            n0 = smps_sent(h)
            sweep = _apply(h, sm, f, down=True)
            n1 = smps_sent(h)
            degraded = load_dumps(sm.dumps, require_sl2vl=False)
            if not _reflected(degraded, f):
                raise RuntimeError(f"{engine}: the dumps after {f} do not show it")
            entries, blocks = lft_changes(pristine, degraded)
            _apply(h, sm, f, down=False)
            restored = load_dumps(sm.dumps, require_sl2vl=False)
            rows.append(
                {
                    "engine": engine,
                    "kind": kind,
                    "fault": str(f),
                    "routed_by": sweep.engine,
                    "crossed": len(crossed),
                    "direct": len(direct),
                    "entries": len(entries),
                    "blocks": len(blocks),
                    "collateral": len(entries - crossed),
                    # which entries, to say why (switch GUID, LID, before -> after)
                    "collateral_sample": [
                        (hex(g), lid, pristine.nodes[g].route(lid), degraded.nodes[g].route(lid))
                        for g, lid in sorted(entries - crossed)[:12]
                    ],
                    "smps": n1 - n0 - 1,  # less the SMInfo query's own response
                    "resweep_s": round(sweep.lines[-1].t - sweep.lines[0].t, 3) if sweep.lines else None,
                    "restored_pristine": lft_changes(pristine, restored)[0] == set(),
                }
            )
            log(f"{engine} {f}: {len(entries)} entries changed, {len(crossed)} crossed")
    finally:
        sm.stop()
    return rows


def summarise(size: int, rows: list[dict]) -> list[dict]:
    out = []
    for kind in KINDS:
        base: dict[str, dict] = {}
        for engine in ENGINES:
            rs = [r for r in rows if r["engine"] == engine and r["kind"] == kind]
            if not rs:
                continue
            crossed = sum(r["crossed"] for r in rs)
            entries = sum(r["entries"] for r in rs)
            row = {
                "cas": size,
                "kind": kind,
                "engine": engine,
                "faults": len(rs),
                "crossed": crossed,
                "direct": sum(r["direct"] for r in rs),
                "entries": entries,
                "entries/crossed": round(entries / crossed, 3) if crossed else None,
                "collateral": sum(r["collateral"] for r in rs),
                "blocks": sum(r["blocks"] for r in rs),
                "smps": sum(r["smps"] for r in rs),
                "resweep_s_median": statistics.median(r["resweep_s"] for r in rs),
                "routed_by": ",".join(sorted({r["routed_by"] or "-" for r in rs})),
                "restored_pristine": sum(r["restored_pristine"] for r in rs),
            }
            base.setdefault("entries", entries)
            row["entries/dla"] = round(entries / base["entries"], 2) if base["entries"] else None
            out.append(row)
    return out


def bench_churn(sizes: list[int], per_kind: int, log) -> tuple[list[dict], list[dict]]:
    table, details = [], []
    for size in sizes:
        topo = dragonfly(*DRAGONFLY_SIZES[size])
        faults = pick_faults(topo, per_kind)
        with tempfile.TemporaryDirectory(prefix=f"bench-churn-df{size}-") as tmp:
            net = topo.write_net(Path(tmp) / "fabric.net")
            with Harness(net, run_dir=Path(tmp) / "run", console=True) as h:
                rows = []
                for engine in ENGINES:
                    log(f"df{size}: {engine}, {len(faults)} faults")
                    rows += measure_engine(h, engine, faults, log)
        table += summarise(size, rows)
        details += [{"cas": size, **r} for r in rows]
    return table, details
