"""`ibqos simulate --sweep --slurm` against a real Slurm (slurmcluster.py: munged, slurmctld
and slurmd on this host): the points go out as one job array, each task simulates its point,
and the merged sim.json equals the local run's with the same seed, number for number (all but
the host's timings of each run)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from ibqos_sim.sim.result import without_timing
from simfabrics import dragonfly_dla
from slurmcluster import PARTITION, logs, slurm_cluster  # noqa: F401

# 4 points, a few hundred ms of CPU each on the 72-CA dragonfly
SWEEP = ["--traffic", "uniform", "--sweep", "0.25:1.0:0.25", "--warmup-us", "30", "--time-us", "150", "--seed", "7"]


def measured(path: Path) -> dict:
    doc = json.loads(path.read_text())
    doc["results"] = [without_timing(r) for r in doc["results"]]
    return doc


@pytest.fixture(scope="module")
def local_run(ibqos_cli, tmp_path_factory):
    """The fabric, and the same sweep run on this host's cores."""
    run = tmp_path_factory.mktemp("run")
    dragonfly_dla(vls=2).save(run / "fabric.json")
    cp = ibqos_cli("simulate", run, *SWEEP, "--jobs", "2", "--out", run / "local")
    assert cp.returncode == 0, cp.stderr
    return run, measured(run / "local" / "uniform-sweep.json")


def test_array_sweep_merges_to_the_local_results(ibqos_cli, slurm_cluster, local_run):
    run, local = local_run
    cp = ibqos_cli(
        "simulate", run, *SWEEP, "--slurm", "--slurm-partition", PARTITION, "--slurm-time", "5", "--plot",
        "--out", run / "slurm", env=slurm_cluster.env,
    )  # fmt: skip
    assert cp.returncode == 0, cp.stderr + logs(slurm_cluster)
    assert "submitted job array" in cp.stdout and "load sweep" in cp.stdout
    merged = measured(run / "slurm" / "uniform-sweep.json")
    assert [r["load"] for r in merged["results"]] == [0.25, 0.5, 0.75, 1.0]
    assert merged == local
    # Slurm ran them: one array task per point, each logging its point
    jobdir = run / "slurm" / "uniform-sweep.slurm"
    job = json.loads((jobdir / "job.json").read_text())["job_id"]
    for i in range(4):
        assert f"point {i}: load" in (jobdir / "logs" / f"{job}_{i}.out").read_text()
    assert (run / "slurm" / "uniform-sweep-throughput.png").stat().st_size > 0


def test_a_sweep_into_a_directory_with_a_percent_sign_logs_and_merges(ibqos_cli, slurm_cluster, local_run, tmp_path):
    """sbatch expands %-patterns in --output's whole path: out/`run%j` was read as run<job id>,
    a directory that is not there, so no task could open its log and none ran."""
    run, local = local_run
    out = tmp_path / "run%j"
    cp = ibqos_cli(
        "simulate", run, *SWEEP, "--slurm", "--slurm-partition", PARTITION, "--slurm-time", "5", "--out", out,
        env=slurm_cluster.env,
    )  # fmt: skip
    assert cp.returncode == 0, cp.stderr + logs(slurm_cluster)
    assert measured(out / "uniform-sweep.json") == local
    jobdir = out / "uniform-sweep.slurm"
    job = json.loads((jobdir / "job.json").read_text())["job_id"]
    assert "point 0: load" in (jobdir / "logs" / f"{job}_0.out").read_text()


def test_no_wait_then_collect(ibqos_cli, slurm_cluster, local_run):
    run, local = local_run
    cp = ibqos_cli(
        "simulate", run, *SWEEP, "--slurm", "--no-wait", "--slurm-opt", f"--partition={PARTITION} --time=5",
        "--out", run / "later", env=slurm_cluster.env,
    )  # fmt: skip
    assert cp.returncode == 0, cp.stderr + logs(slurm_cluster)
    jobdir = run / "later" / "uniform-sweep.slurm"
    assert f"ibqos simulate --collect {jobdir}" in cp.stdout
    assert not (run / "later" / "uniform-sweep.json").exists()
    cp = collect_when_done(ibqos_cli, jobdir, slurm_cluster.env)
    assert cp.returncode == 0, cp.stderr + logs(slurm_cluster)
    assert measured(run / "later" / "uniform-sweep.json") == local
    assert [without_timing(r) for r in json.loads(cp.stdout)["results"]] == local["results"]


def collect_when_done(ibqos_cli, jobdir: Path, env: dict) -> subprocess.CompletedProcess:
    """`ibqos simulate --collect` once it no longer says the job is still running."""
    deadline = time.monotonic() + 60
    while True:
        cp = ibqos_cli("simulate", "--collect", jobdir, "--json", env=env)
        if "still running" not in cp.stderr or time.monotonic() > deadline:
            return cp
        assert cp.returncode == 3, cp.stderr
        time.sleep(0.5)


def test_a_failed_task_is_named_with_its_log(ibqos_cli, slurm_cluster, local_run, tmp_path):
    """A point whose task fails leaves no result: the merge names it, its log and the error."""
    run, _ = local_run
    cp = ibqos_cli(
        "simulate", run, *SWEEP, "--slurm", "--no-wait", "--slurm-partition", PARTITION, "--slurm-opt", "--hold",
        "--out", tmp_path, env=slurm_cluster.env,
    )  # fmt: skip
    assert cp.returncode == 0, cp.stderr + logs(slurm_cluster)
    jobdir = tmp_path / "uniform-sweep.slurm"
    job = json.loads((jobdir / "job.json").read_text())["job_id"]
    (jobdir / "fabrics" / "0.json").write_text('{"schema": "not a fabric"}')  # held: no task has read it
    subprocess.run(["scontrol", "release", job], env=slurm_cluster.env, check=True, timeout=30)
    cp = collect_when_done(ibqos_cli, jobdir, slurm_cluster.env)
    assert cp.returncode == 3, cp.stderr
    line = cp.stderr.strip()
    assert line.startswith(f"ibqos: error: job {job}: 4 of 4 points have no result: point 0 ("), line
    assert f"{jobdir}/logs/{job}_0.out" in line and "not an ibqos fabric model" in line, line
    assert not (tmp_path / "uniform-sweep.json").exists()


@pytest.mark.fabric
def test_compare_engines_points_as_an_array(ibqos_cli, slurm_cluster, tmp_path):
    """compare-engines routes on OpenSM here and sends its simulations out as one array: its
    compare.json equals the one of the same comparison run on local cores."""
    args = ["compare-engines", "df42", "--engines", "dla,minhop", "--patterns", "uniform,hotspot"]
    args += ["--loads", "0.5,1.0", "--warmup-us", "20", "--time-us", "100", "--buffer-packets", "2"]
    local = ibqos_cli(*args, "--jobs", "2", "--out", tmp_path / "local", timeout=300)
    assert local.returncode == 0, local.stderr
    cp = ibqos_cli(*args, "--slurm", "--slurm-partition", PARTITION, "--out", tmp_path / "slurm", env=slurm_cluster.env)
    assert cp.returncode == 0, cp.stderr + logs(slurm_cluster)
    assert "submitted job array" in cp.stderr
    jobdir = tmp_path / "slurm" / "compare.slurm"
    assert len(list((jobdir / "results").glob("*.json"))) == 8  # 2 engines x 2 patterns x 2 loads
    doc = json.loads((tmp_path / "slurm" / "compare.json").read_text())
    assert doc == json.loads((tmp_path / "local" / "compare.json").read_text())
    assert [e["engine"] for e in doc["engines"]] == ["dla", "minhop"]
    for e in doc["engines"]:
        assert [[pt["load"] for pt in e["curves"][p]] for p in ("uniform", "hotspot")] == [[0.5, 1.0]] * 2
        assert all(pt["accepted_pct"] > 0 for p in ("uniform", "hotspot") for pt in e["curves"][p])
