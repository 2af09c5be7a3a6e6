"""A sweep's points on several processes give the very numbers of the serial run, in the
order of the points, whichever process finished first; a failing point's error reaches the
caller; and `ibqos simulate` says which option combinations it refuses, in one line."""

from __future__ import annotations

import json
import os

import pytest
from ibqos.errors import InputError
from ibqos_sim.sim import SimParams, TrafficSpec
from ibqos_sim.sim.points import Point, run_points
from ibqos_sim.sim.result import SimResult, without_timing
from simfabrics import config_a, dragonfly_dla, star


def _points() -> list[Point]:
    uniform = TrafficSpec(pattern="uniform")
    p = SimParams(warmup_us=20, time_us=200, seed=3)
    # two fabrics, two buffer sizes, loads out of order: each point is its own simulation
    return [
        Point("df", uniform, p, 0.9),
        Point("df", uniform, p.model_copy(update={"buffer_packets": 2}), 0.3),
        Point("star", TrafficSpec(pattern="twonode", sls=[0, 1, 2, 3]), p, 0.8),
        Point("df", uniform, p.model_copy(update={"seed": 4}), 0.6),
        Point("df", TrafficSpec(pattern="hotspot"), p, 0.5),
    ]


def test_two_processes_give_the_serial_numbers_in_point_order():
    fabrics = {"df": dragonfly_dla(vls=2), "star": star(2, config_a())}
    finished = []
    serial = run_points(fabrics, _points(), jobs=1)
    parallel = run_points(fabrics, _points(), jobs=2, done=lambda i, r: finished.append(i))
    assert sorted(finished) == list(range(5))
    assert [r.load for r in parallel] == [0.9, 0.3, 0.8, 0.6, 0.5]
    assert [without_timing(r.to_json()) for r in parallel] == [without_timing(r.to_json()) for r in serial]
    # the points differ from each other (a seed, a buffer size, a pattern change the numbers)
    assert len({json.dumps(without_timing(r.to_json()), sort_keys=True) for r in serial}) == 5
    assert parallel[0].counters["delivered"] > 0 and parallel[2].pattern == "twonode"


def test_a_result_survives_its_trip_through_json():
    (res,) = run_points({"df": dragonfly_dla(vls=2)}, _points()[:1], jobs=1)
    back = SimResult.from_json(json.loads(json.dumps(res.to_json())))
    assert json.dumps(back.to_json()) == json.dumps(res.to_json())
    assert back.per_class[0].net_latency.p99_us == res.per_class[0].net_latency.p99_us
    assert set(back.per_vl) == set(res.per_vl) and all(isinstance(v, int) for v in back.per_vl)


def test_a_failing_point_raises_its_error_from_the_worker():
    pts = _points()
    pts[3] = Point("star", TrafficSpec(pattern="twonode", src="nope", dst="nada"), pts[0].params, 0.5)
    with pytest.raises(InputError, match="no CA port named 'nope'"):
        run_points({"df": dragonfly_dla(vls=2), "star": star(2, config_a())}, pts, jobs=2)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--sweep", "0.5:1:0.5", "--slurm", "--jobs", "2"], "--jobs: --jobs is for local runs"),
        (["--sweep", "0.5:1:0.5", "--slurm-partition", "p"], "--slurm: the Slurm options need --slurm"),
        (["--sweep", "0.5:1:0.5", "--no-wait"], "--slurm: the Slurm options need --slurm"),
        (["--slurm", "--slurm-opt", "--array=0-3"], "--slurm-opt: --array=0-3: ibqos sets this itself"),
        # getopt_long's prefixes and attached short values: these passed and replaced the array or the logs
        (["--slurm", "--slurm-opt", "--arr=0-3"], "--slurm-opt: --arr=0-3: ibqos sets this itself"),
        (["--slurm", "--slurm-opt", "-o/tmp/x.out"], "--slurm-opt: -o/tmp/x.out: ibqos sets this itself"),
        (["--slurm", "--slurm-opt", "--hold -a0-1"], "--slurm-opt: -a0-1: ibqos sets this itself"),
        (["--slurm", "--slurm-opt", "--outp=x"], "--slurm-opt: --outp=x: ibqos sets this itself"),
        (["--slurm", "--slurm-opt", "--time='5"], '--slurm-opt: "--time=\'5": No closing quotation'),
        (["--jobs", "0"], "Invalid value for '--jobs'"),
    ],
)
def test_bad_sweep_options_are_one_line(ibqos_cli, tmp_path, args, message):
    dragonfly_dla(vls=2).save(tmp_path / "fabric.json")
    cp = ibqos_cli("simulate", tmp_path, *args, timeout=60)
    assert cp.returncode == 2, cp.stderr
    assert message in cp.stderr and "Traceback" not in cp.stderr
    assert not (tmp_path / "sim").exists()


def test_collect_needs_a_sweep_directory(ibqos_cli, tmp_path):
    env = {**os.environ, "COLUMNS": "200"}
    cp = ibqos_cli("simulate", "--collect", tmp_path, env=env)
    assert cp.returncode == 2
    assert cp.stderr.strip() == (
        f"ibqos: error: {tmp_path}/sweep.json: no sweep here (no sweep.json): give the directory a --slurm sweep wrote"
    )
    cp = ibqos_cli("simulate", env=env)
    assert cp.returncode == 2 and "RUNDIR: give RUNDIR (or --collect DIR)" in cp.stderr


@pytest.mark.parametrize(
    "text, says",
    [
        ('{"schema": "ibqos.sweep/1", "points": [{"fabric": "x"}]}', "not a sweep this ibqos wrote"),
        ("[" * 100_000, "nested too deeply"),
        ('{"schema": "ibqos.sweep/1", "points": [], "x": NaN}', "NaN"),
    ],
)
def test_collect_of_a_damaged_sweep_is_one_line(ibqos_cli, tmp_path, text, says):
    """sweep.json is read like every other input (inputfile, finite numbers) and a document
    this ibqos did not write is one error line, not a KeyError traceback."""
    (tmp_path / "sweep.json").write_text(text)
    cp = ibqos_cli("simulate", "--collect", tmp_path)
    assert cp.returncode == 2, cp.stderr
    assert len(cp.stderr.strip().splitlines()) == 1 and says in cp.stderr, cp.stderr
