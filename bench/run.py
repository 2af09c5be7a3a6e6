"""Run the benchmarks and write bench/results/<section>.json and bench/results/README.md.

make bench                                   # 42..2550 CAs; at 2550 no LASH/updn
make bench BENCH_ARGS="--lash-2550"          # opt in to LASH at 2550 (about 2 minutes)
make bench BENCH_ARGS="--only engines --sizes 42,72"
make bench BENCH_ARGS="--only dfplus"                        # dla vs minhop on dragonflies+ (144, 1088 CAs)
make bench BENCH_ARGS="--only sweep"                         # --jobs 2 against --jobs 1 (~1 min)
make bench BENCH_ARGS="--only faults"                        # faults alone: 342:120,1056:12 (~10 min)
make bench BENCH_ARGS="--only faults --fault-sizes 342:all"  # every single fault at 342 (~25 min)
make bench BENCH_ARGS="--only churn --churn-sizes 342"       # LFT churn after a fault, 3 engines
make bench BENCH_ARGS="--only scale"                         # 10,112- and 10,240-CA dry runs, per stage (~20 min)
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

from ibqos.docfile import write_atomic, write_json
from ibqos.paths import REPO_ROOT
from ibqos_sim.harness.topology import from_spec
from rich.console import Console

from . import churn, engines, fabric, faults, monitor, planner, scale, simspeed, sweep

RESULTS = Path(__file__).resolve().parent / "results"
console = Console(stderr=True)

SECTIONS = ("planner", "engines", "dfplus", "fabric", "simspeed", "sweep", "faults", "churn", "monitor", "scale")


def _fmt(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.4f}" if v < 10 else f"{v:.1f}"
    if isinstance(v, list):
        return ",".join(map(str, v))
    return str(v)


def markdown(rows: list[dict], cols: list[str]) -> str:
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(_fmt(r.get(c)) for c in cols) + " |" for r in rows]
    return "\n".join(out)


def ratios_vs(rows: list[dict], baseline: str, key: str = "engine_s") -> None:
    """Speed as a ratio against the baseline engine measured in the same run, same size."""
    base = {r["cas"]: r[key] for r in rows if r["engine"] == baseline and r.get(key)}
    for r in rows:
        b = base.get(r["cas"])
        r[f"{key}/{baseline}"] = round(r[key] / b, 3) if b and r.get(key) else None


def keep_other_rows(path: Path, rows: list[dict], when: str, key: tuple[str, ...]) -> list[dict]:
    """A narrow run (`--sizes 2550 --engines minhop,dla`) replaces the stored rows it measured and
    keeps the others, each with the date it was measured: ratios are only ever computed within
    one run, so a kept row's ratio is still its own run's."""
    for r in rows:
        r["measured"] = when
    fresh = {tuple(r[k] for k in key) for r in rows}
    doc = json.loads(path.read_text()) if path.exists() else {"meta": {}, "rows": []}
    stored = doc["rows"]
    kept = [r for r in stored if tuple(r.get(k) for k in key) not in fresh]
    for r in kept:
        r.setdefault("measured", doc["meta"].get("when"))
    order = {e: i for i, e in enumerate(dict.fromkeys(r["engine"] for r in [*stored, *rows]))}
    return sorted([*kept, *rows], key=lambda r: (r["cas"], order[r["engine"]]))


def main() -> None:
    ap = argparse.ArgumentParser(prog="make bench")
    ap.add_argument("--sizes", default="42,72,342,1056,2550")
    ap.add_argument("--engines", default="minhop,updn,lash,dfsssp,dla")
    ap.add_argument("--lash-2550", action="store_true", help="LASH at 2550 CAs too (about 2 min)")
    ap.add_argument(
        "--dfplus",
        default="dfplus:l=4,s=4,p=4,h=2;dfplus:l=8,s=8,p=8,h=2",
        help="dfplus section: dragonfly+ topology specs, ';'-separated (default 144 and 1088 CAs)",
    )
    ap.add_argument("--dfplus-engines", default="minhop,dla")
    ap.add_argument("--only", default=",".join(SECTIONS))
    ap.add_argument(
        "--fault-sizes",
        default="342:120,1056:12",
        help="faults section: CAs:all|N per size (N: a seeded sample over the four kinds)",
    )
    ap.add_argument(
        "--fault-minhop",
        type=int,
        default=20,
        help="faults section: faults per size re-swept by minhop too, for the ratio",
    )
    ap.add_argument("--churn-sizes", default="342,2550", help="churn section: dragonfly sizes")
    ap.add_argument("--churn-faults", type=int, default=2, help="churn section: faults per kind and size")
    ap.add_argument(
        "--scale-specs",
        default=";".join(scale.SPECS),
        help="scale section: topology specs, ';'-separated (default: bench.scale.SPECS, about 10,000 CAs each)",
    )
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    only = set(args.only.split(","))
    RESULTS.mkdir(exist_ok=True)
    meta = {
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "host": platform.node(),
        "note": "ratios are against a baseline measured in the same run",
    }
    sections: dict[str, list[str]] = {}

    if "planner" in only:
        rows = planner.bench_planner(log=console.log)
        write_json(RESULTS / "planner.json", {"meta": meta, "rows": rows})
        sections["planner"] = [
            "## Planner: policy → plan → exact analysis of every port role",
            "",
            "Best and median of 5; the baseline is seed 002's Algorithm 1 (30 runs) on the "
            "plan's terminal tables alone.",
            "",
            markdown(
                rows,
                [
                    "policy",
                    "classes",
                    "plan_s_best",
                    "plan_s_median",
                    "algorithm1_30runs_s",
                    "plan/algorithm1",
                    "under_1s",
                ],
            ),
            "",
        ]

    if "dfplus" in only:
        topos = [from_spec(spec) for spec in args.dfplus.split(";")]
        rows = engines.bench_topologies(topos, args.dfplus_engines.split(","), log=console.log)
        ratios_vs(rows, "minhop")
        ratios_vs(rows, "minhop", key="resweep_s")
        write_json(RESULTS / "dfplus.json", {"meta": meta, "rows": rows})
        cols = ["fabric", "cas", "engine", "engine_s", "engine_s/minhop", "resweep_s", "resweep_s/minhop"]
        cols += ["vls_engine", "vls_used", "configured_by", "verdict", "cdg_acyclic", "max_hops"]
        cols += ["global_routes_max", "global_routes_mean"]
        sections["dfplus"] = [
            "## dla on dragonflies+ against minhop",
            "",
            "Each group a two-level leaf/spine fat tree (`dfplus:l=leaves,s=spines,p=hosts per "
            "leaf,h=globals per spine`, one global link per group pair). Columns as in the engines "
            "table; global_routes_max/mean: dla's (source switch, LID) routes per global link.",
            "",
            markdown(rows, cols),
            "",
        ]

    if "engines" in only:
        skip = set() if args.lash_2550 else {(2550, "lash"), (2550, "updn")}
        rows = engines.bench_engines(sizes, args.engines.split(","), log=console.log, skip=skip)
        for key in ("engine_s", "resweep_s", "sm_s"):
            ratios_vs(rows, "minhop", key=key)
        rows = keep_other_rows(RESULTS / "engines.json", rows, meta["when"], key=("cas", "engine"))
        write_json(RESULTS / "engines.json", {"meta": meta, "rows": rows})
        cols = [
            "measured",
            "cas",
            "engine",
            "engine_s",
            "engine_s_runs",
            "engine_s/minhop",
            "resweep_s",
            "resweep_s/minhop",
            "hop_fill_ms",
            "resweep_hop_fill_ms",
            "sm_s",
            "sm_s/minhop",
            "vls_engine",
            "vls_used",
            "configured_by",
            "fell_back",
            "verdict",
            "cdg_acyclic",
            "max_hops",
            "verify_s",
        ]
        sections["engines"] = [
            "## Routing engines on ibsim dragonflies",
            "",
            "engine_s: routing-engine time from osm.log ('building routing with' → "
            "'tables configured') of the first sweep, for minhop and dla the median of "
            f"{engines.FIRST_SWEEPS} fresh OpenSMs (engine_s_runs); resweep_s: the same for a heavy re-sweep "
            "(SIGHUP) of a running OpenSM, median of 2, where OpenSM reuses its hop tables; "
            "hop_fill_ms, resweep_hop_fill_ms: dla's fill of OpenSM's hop rows, done after the "
            "routing (at UCAST_ROUTING_DONE, outside engine_s; docs/hop-rows.md), first sweep and "
            "re-sweep; sm_s: whole `opensm --once`.",
            "",
            markdown(rows, cols),
            "",
        ]

    if "monitor" in only:
        rows = monitor.bench_monitor([max(sizes)], log=console.log)
        write_json(RESULTS / "monitor.json", {"meta": meta, "rows": rows})
        sections["monitor"] = [
            "## ibqos monitor: one PMA sample of every port against per-port perfquery",
            "",
            "monitor_sample_s: `ibqos-readback -T -c -W 0.05` (nodes, ports, links, then PortXmitDataSL, "
            "PortRcvDataSL, PortVLXmitWaitCounters and PortCountersExtended of every linked port, and "
            "PortXmitDataSL again 0.05 s after its answer, the sub-window; the default bound of 40000 "
            "MADs/s); no_window_s: the same without the sub-window, in the same run (medians of two, "
            "alternated); mads: PMA Gets of the first. perfquery: the four attributes, one process "
            "each, timed on perfquery_ports_timed CA ports in the same run and extrapolated to "
            "ports_sampled.",
            "",
            markdown(
                rows,
                [
                    "cas",
                    "ibsim",
                    "ports_sampled",
                    "ports_with_per_sl",
                    "monitor_sample_s",
                    "no_window_s",
                    "window/no_window",
                    "mads",
                    "under_5s",
                    "perfquery_s_per_port",
                    "perfquery_all_ports_est_s",
                    "perfquery/monitor",
                ],
            ),
            "",
        ]

    if "fabric" in only:
        rows = fabric.bench_fabric(sorted(set(sizes) | {72}), log=console.log)
        write_json(RESULTS / "fabric.json", {"meta": meta, "rows": rows})
        sections["fabric"] = [
            "## Read-back, verification and simulation of the dla-routed fabric",
            "",
            "readback: LFT, SL2VL, VLArb, PortInfo in one process; per_port_smpquery_est: one "
            "measured `smpquery` × the SL2VL+VLArb queries a per-port approach needs; "
            "verify: every CA pair + CDG, against the whole `opensm --once` of the same run.",
            "",
            markdown(
                rows,
                [
                    "cas",
                    "switches",
                    "all_discovered",
                    "readback_s",
                    "ibnetdiscover_s",
                    "readback/ibnetdiscover",
                    "per_port_smpquery_est_s",
                    "sm_once_s",
                    "verify_s",
                    "verify/sm_once",
                    "verdict",
                ],
            ),
            "",
            "fabric.json of the read-back model: `Fabric.save` / `Fabric.load` (pydantic, validated "
            "from the JSON text), against a bare `json.loads` of the same file:",
            "",
            markdown(
                rows,
                [
                    "cas",
                    "model_mb",
                    "model_save_s",
                    "model_load_s",
                    "json_loads_s",
                    "model_load/json_loads",
                    "model_roundtrip",
                ],
            ),
            "",
            "Simulator (uniform traffic, QDR, 4 KB MTU, 16 packets per VL, VOQ; seed 003 §5.2):",
            "",
            markdown(
                [r for r in rows if "sim_us" in r],
                [
                    "cas",
                    "sim_load",
                    "sim_us",
                    "sim_wall_s",
                    "sim_cpu_s",
                    "sim_Mhops_per_cpu_s",
                    "sim_peak_mb",
                    "sim_status",
                    "sim_accepted_pct",
                ],
            ),
            "",
        ]

    if "simspeed" in only:
        rows = simspeed.bench_simspeed(console.log)
        write_json(RESULTS / "simspeed.json", {"meta": meta, "rows": rows})
        sections["simspeed"] = [
            "## Simulator speed against the core of a reference commit, same run",
            "",
            f"packet-hops per CPU second, median of {simspeed.REPEATS} alternating runs of each "
            f"library on the same read-back fabric (uniform, VOQ, QDR, 4 KB); baseline: the core "
            f"at {simspeed.BASELINE_REF} (main's when issue 25 was filed), through its own binding. "
            "goal_ratio: issue 25's goal over what that core measured when the goal was set (the "
            "low end of its range), the ratio the goal asks for on a machine whose absolute rate "
            "drifts. identical: every pair of runs agreed on all results but the host's timings "
            "(packets, hops, events, latencies).",
            "",
            markdown(
                rows,
                [
                    "cas",
                    "load",
                    "sim_us",
                    "baseline_Mhops_per_cpu_s",
                    "now_Mhops_per_cpu_s",
                    "now/baseline",
                    "goal_ratio",
                    "goal_met",
                    "identical",
                ],
            ),
            "",
        ]

    if "sweep" in only:
        rows = sweep.bench_sweep(console.log)
        write_json(RESULTS / "sweep.json", {"meta": meta, "rows": rows})
        sections["sweep"] = [
            "## A sweep on every core: --jobs 2 against --jobs 1, same run",
            "",
            f"`ibqos simulate --sweep {sweep.SWEEP}` ({sweep.WARMUP_US} µs warm-up + {sweep.TIME_US} µs "
            f"per point) on the dla-routed {sweep.SIZE}-CA dragonfly, wall time of the whole command, "
            f"alternating, {sweep.REPEATS} runs each; ratios of the medians and of the best runs "
            "(at_most_0.6 is judged on the best: the machine is shared, and the 1-minute load "
            "average before each run is beside it). identical_results: every sim.json of both "
            "equal but for the host's timings of each point (wall_s, cpu_s, hops_per_cpu_s).",
            "",
            markdown(
                rows,
                [
                    "cas",
                    "points",
                    "cores",
                    "jobs1_s",
                    "jobs2_s",
                    "loadavg_before_jobs1",
                    "loadavg_before_jobs2",
                    "jobs2/jobs1_median",
                    "jobs2/jobs1_best",
                    "at_most_0.6",
                    "identical_results",
                ],
            ),
            "",
        ]

    if "faults" in only:
        plan = [
            (int(c), None if n == "all" else int(n))
            for c, n in (part.split(":") for part in args.fault_sizes.split(","))
        ]
        rows, details = faults.bench_faults(plan, args.fault_minhop, log=console.log)
        write_json(RESULTS / "faults.json", {"meta": meta, "rows": rows, "details": details})
        sections["faults"] = [
            "## Single faults under a running OpenSM with dla",
            "",
            "Each fault is taken down on ibsim, OpenSM re-sweeps, the dumps are judged "
            "(verify + ibdmchk), then it is restored and the LFTs compared with the pristine "
            "ones (ibqos_sim.campaign, as plugin/tests/test_dla_faults.py at 42/72). survived: "
            "routed by dla, every surviving pair delivered, both judges clean, ≤ 3 VLs, and back "
            "to pristine after the restore. resweep_s: engine time of the re-sweep after the "
            "fault (every engine tried, a refusal included); resweep/minhop: median per-fault "
            "ratio against minhop re-sweeping the same faults in the same run. hops: "
            "switch-to-switch links per CA pair, before (pristine) and after (dla-routed "
            "faults of the kind, all pairs pooled).",
            "",
            markdown(
                rows,
                [
                    "cas",
                    "kind",
                    "tried",
                    "survived",
                    "refused",
                    "credit_loops",
                    "max_vls",
                    "restored_pristine",
                    "resweep_s_median",
                    "resweep/minhop",
                    "paired_with_minhop",
                    "mean_hops_before",
                    "mean_hops_after",
                    "max_hops_after",
                    "fault_s_mean",
                ],
            ),
            "",
            markdown(rows, ["cas", "kind", "hops_before", "hops_after"]),
            "",
        ]

    if "churn" in only:
        rows, details = churn.bench_churn([int(c) for c in args.churn_sizes.split(",")], args.churn_faults, console.log)
        write_json(RESULTS / "churn.json", {"meta": meta, "rows": rows, "details": details})
        sections["churn"] = [
            "## Churn after a fault: LFT entries each engine changes, same faults, same run",
            "",
            f"{args.churn_faults} faults per kind and size (links: local and global alternating; "
            "seeded, the same for every engine), each taken down under a running OpenSM, then "
            "repaired (bench/churn.py). Sums over the faults of a kind: crossed, the pristine "
            "entries whose route crossed the fault; direct, those whose own output was the failed "
            "link or led into the failed switch; entries and blocks changed by the re-sweep; "
            "collateral, changed entries whose route did not cross the fault; smps, QP0 SMPs "
            "OpenSM sent in the re-sweep (SMInfo ActCount); resweep_s, first line after the fault "
            "to SUBNET UP; restored_pristine, faults after whose repair the LFTs were the pristine "
            "ones again.",
            "",
            markdown(
                rows,
                [
                    "cas",
                    "kind",
                    "engine",
                    "faults",
                    "crossed",
                    "direct",
                    "entries",
                    "entries/crossed",
                    "entries/dla",
                    "collateral",
                    "blocks",
                    "smps",
                    "resweep_s_median",
                    "routed_by",
                    "restored_pristine",
                ],
            ),
            "",
        ]

    if "scale" in only:
        runs = []
        for spec in args.scale_specs.split(";"):  # one fresh interpreter per fabric (bench_scale)
            with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
                runs.append(scale.bench_scale(spec, Path(tmp) / "run", console.log))
        write_json(RESULTS / "scale.json", {"meta": meta, "runs": runs})
        heads = [{k: v for k, v in r.items() if k != "stages"} for r in runs]
        head_cols = list(dict.fromkeys(k for h in heads for k in h if k != "summary"))
        stage_cols, stage_rows = scale.side_by_side(runs)
        sections["scale"] = [
            "## A whole dry run at scale: time and peak memory of every stage",
            "",
            f"`ibqos dryrun {scale.POLICY.relative_to(REPO_ROOT)} --topology SPEC` for each fabric, each "
            "in its own interpreter (bench/scale.py): OpenSM with dla on ibsim, read-back, verify "
            "and a short simulation. Per fabric (column prefix: its spec's kind): s, the stage's "
            "seconds; py_mb, the dry run's own peak RSS in the stage; child_mb, a child that ended "
            "in the stage (OpenSM --once, the read-back tool), when it set a new maximum; "
            "ibsim_mb, ibsim's peak so far.",
            "",
            markdown(heads, head_cols),
            "",
            markdown(stage_rows, stage_cols),
            "",
        ]

    # Each section keeps its own file, so `--only X` refreshes X and keeps the others.
    for name, lines in sections.items():
        write_atomic(RESULTS / f"{name}.md", f"_measured {meta['when']}_\n\n" + "\n".join(lines) + "\n")
    parts = [(RESULTS / f"{n}.md").read_text() for n in SECTIONS if (RESULTS / f"{n}.md").exists()]
    text = "# ibqos bench\n\n" + "\n".join(parts)
    write_atomic(RESULTS / "README.md", text)
    print(text)


if __name__ == "__main__":
    main()
