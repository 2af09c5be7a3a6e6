"""The dry run at scale (issue 25): one whole `ibqos dryrun` of each large fabric of SPECS (OpenSM
with dla on ibsim, read-back, verify, a short simulation), each stage's time and peak memory.

Each fabric runs in its own interpreter (`python -m bench.scale SPEC OUT`), so the peaks are
that run's:

- python_peak_mb: this process's peak RSS during the stage (VmHWM, reset at the start of each
  stage through /proc/self/clear_refs);
- children_peak_mb: the largest peak RSS of a child process that ended during the stage
  (OpenSM --once, the read-back tool), when it set a new maximum (RUSAGE_CHILDREN is a
  maximum over all children so far); else empty;
- ibsim_peak_mb: the ibsim process's peak RSS so far (it lives from launch to the end).
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

from ibqos.paths import REPO_ROOT
from ibqos.proc import run_command
from ibqos_app.dryrun.pipeline import DryRun, DryRunConfig

POLICY = REPO_ROOT / "examples" / "four-class.yaml"
SPECS = (
    # a=16, p=8, h=8 with 79 groups: 10,112 CAs on 632 x 2 = 1,264 switches
    "dragonfly:a=16,p=8,h=8,g=79",
    # 16 leaves (16 hosts each) and 16 spines (8 globals each) per group, 40 groups: 10,240 CAs on
    # 1,280 switches, each group's 128 global links dealt over its 39 peers (3 or 4 each)
    "dfplus:l=16,s=16,p=16,h=8,g=40",
)


def _hwm_mb(pid: int | str = "self") -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def _reset_hwm() -> None:
    Path("/proc/self/clear_refs").write_text("5")  # Linux >= 4.0: VmHWM := current RSS


def _children_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)


def run(spec: str, out: Path, sim_time_us: float, sim_warmup_us: float) -> dict:
    mem: dict[str, dict] = {}
    dry: DryRun | None = None
    last_children = [_children_mb()]

    def progress(stage: str, frac: float) -> None:
        if frac == 0.0:
            _reset_hwm()
            return
        if frac < 1.0:
            return
        ch = _children_mb()
        h = dry.s.harness if dry is not None else None
        ibsim_pid = getattr(getattr(h, "ibsim", None), "pid", None)
        mem[stage] = {
            "python_peak_mb": _hwm_mb(),
            "children_peak_mb": ch if ch > last_children[0] else None,
            "ibsim_peak_mb": _hwm_mb(ibsim_pid) if ibsim_pid else None,
        }
        last_children[0] = max(last_children[0], ch)

    cfg = DryRunConfig(policy=POLICY, out=out, topology=spec, sim_time_us=sim_time_us, sim_warmup_us=sim_warmup_us)
    dry = DryRun(cfg, progress=progress)
    t0 = time.monotonic()
    state = dry.run()
    total = time.monotonic() - t0
    report = json.loads((out / "report.json").read_text())
    stages = [{"stage": st.name, "seconds": round(st.seconds, 2), **mem.get(st.name, {})} for st in state.stages]
    return {
        "spec": spec,
        "topology": state.topology_name,
        "cas": len(list(state.fabric.cas())) if state.fabric is not None else None,
        "switches": len(list(state.fabric.switches())) if state.fabric is not None else None,
        "total_s": round(total, 1),
        "ok": dry.ok,
        "summary": report.get("summary"),
        "fabric_json_mb": round((out / "fabric.json").stat().st_size / 1e6, 1)
        if (out / "fabric.json").exists()
        else None,
        "stages": stages,
    }


def bench_scale(spec: str, out: Path, log, sim_time_us: float = 20.0, sim_warmup_us: float = 10.0) -> dict:
    """The run in a fresh interpreter; its JSON result."""
    log(f"dry run at scale: {spec} (one run, minutes)")
    cp = run_command(
        [sys.executable, "-m", "bench.scale", spec, str(out), str(sim_time_us), str(sim_warmup_us)],
        timeout=7200,
        cwd=REPO_ROOT,
        check=False,
    )
    if cp.returncode != 0:
        return {"spec": spec, "ok": False, "error": (cp.stderr.strip().splitlines() or ["?"])[-1]}
    doc: dict = json.loads(cp.stdout.strip().splitlines()[-1])
    return doc


_STAGE_COLS = {"seconds": "s", "python_peak_mb": "py_mb", "children_peak_mb": "child_mb", "ibsim_peak_mb": "ibsim_mb"}


def side_by_side(runs: list[dict]) -> tuple[list[str], list[dict]]:
    """One row per stage, the runs' columns next to each other (prefixed with the spec's kind,
    and its position when two runs share a kind)."""
    kinds = [r["spec"].split(":")[0] for r in runs]
    labels = [k if kinds.count(k) == 1 else f"{k}{i}" for i, k in enumerate(kinds)]
    cols = ["stage"] + [f"{lab} {short}" for lab in labels for short in _STAGE_COLS.values()]
    rows: dict[str, dict] = {}
    for lab, r in zip(labels, runs, strict=True):
        for st in r.get("stages", []):
            row = rows.setdefault(st["stage"], {"stage": st["stage"]})
            row.update({f"{lab} {short}": st.get(key) for key, short in _STAGE_COLS.items()})
    return cols, list(rows.values())


def main() -> None:
    spec, out, t, w = sys.argv[1], Path(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
    print(json.dumps(run(spec, out, t, w)))


if __name__ == "__main__":
    main()
