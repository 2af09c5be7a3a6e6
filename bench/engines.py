"""Routing engines on ibsim dragonflies: engine time (osm.log), SM wall time, VLs, fallback,
verifier verdict. OpenSM's own engines are the baseline the `dla` plugin is compared with."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from ibqos import paths
from ibqos_sim.harness import Harness
from ibqos_sim.topology import DRAGONFLY_SIZES, dragonfly

_VLS = re.compile(r"(?:Virtual )?Lanes needed: (\d+)|dla: .*?(\d+) VLs")


def engine_vls(run) -> int | None:
    for ln in run.lines():
        m = _VLS.search(ln.text)
        if m:
            return int(m.group(1) or m.group(2))
    return None


def verdict(run, harness) -> dict:
    """The verifier's verdict on what OpenSM programmed (None fields when unavailable)."""
    try:
        from ibqos.fabric.dumps import load_dumps
        from ibqos.verify import verify_run
    except ImportError:
        return {"verdict": None}
    rep = verify_run(load_dumps(run.dumps), env=harness.env)
    return {"verdict": "clean" if rep.ok else "defect", "vls_used": sorted(rep.vls_used),
            "cdg_acyclic": rep.cdg_acyclic, "max_hops": max(rep.hop_histogram, default=None)}


def bench_engines(sizes: list[int], engines: list[str], log) -> list[dict]:
    rows = []
    plugin = (paths.plugin_dir() / "libibqos.so").exists()
    for size in sizes:
        topo = dragonfly(*DRAGONFLY_SIZES[size])
        with tempfile.TemporaryDirectory(prefix=f"bench-df{size}-") as tmp:
            net = topo.write_net(Path(tmp) / "fabric.net")
            with Harness(net, run_dir=Path(tmp) / "run") as h:
                for engine in engines:
                    if engine == "dla" and not plugin:
                        continue
                    log(f"df{size}: {engine}")
                    spec = "dla,minhop" if engine == "dla" else engine
                    run = h.run_sm(engine=spec, plugin=engine == "dla", check=False,
                                   timeout=1800)
                    used = run.configured_engines()
                    row = {"cas": size, "engine": engine, "rc": run.rc,
                           "engine_s": run.engine_seconds(), "sm_s": round(run.wall_s, 3),
                           "vls_engine": engine_vls(run),
                           "configured_by": used[-1] if used else None,
                           "fell_back": bool(used) and used[-1] != engine}
                    row.update(verdict(run, h))
                    rows.append(row)
    return rows
