"""`ibqos simulate RUNDIR`, run as the installed command on run directories holding fabric.json."""

from __future__ import annotations

import json
import os

import pytest
from simfabrics import config_a, dragonfly_dla, star


@pytest.fixture
def star_run(tmp_path):
    star(2, config_a()).save(tmp_path / "fabric.json")
    return tmp_path


@pytest.fixture(scope="module")
def dragonfly_runs(tmp_path_factory):
    runs = {}
    for vls in (1, 2):
        d = tmp_path_factory.mktemp(f"df{vls}")
        dragonfly_dla(vls=vls).save(d / "fabric.json")
        runs[vls] = d
    return runs


def test_two_node_table_and_json(ibqos_cli, star_run):
    cp = ibqos_cli("simulate", star_run, "--traffic", "twonode", "--rate", "EDR", "--time-us", "1000")
    assert cp.returncode == 0, cp.stderr
    assert "sl3" in cp.stdout and "done" in cp.stdout
    doc = json.loads((star_run / "sim" / "twonode-0.80.json").read_text())
    assert doc["schema"] == "ibqos.sim/1"
    shares = {c["sl"]: c["share_pct"] for c in doc["results"][0]["per_class"]}
    assert shares[3] == pytest.approx(100 * 6 / 70, abs=0.3)


def test_uniform_sweep_draws_the_curves(ibqos_cli, dragonfly_runs):
    run = dragonfly_runs[2]
    cp = ibqos_cli(
        "simulate",
        run,
        "--traffic",
        "uniform",
        "--sweep",
        "0.2:1.0:0.4",
        "--plot",
        "--warmup-us",
        "20",
        "--time-us",
        "100",
    )
    assert cp.returncode == 0, cp.stderr
    doc = json.loads((run / "sim" / "uniform-sweep.json").read_text())
    assert [r["load"] for r in doc["results"]] == [0.2, 0.6, 1.0]
    acc = [r["accepted_pct"] for r in doc["results"]]
    assert acc[0] == pytest.approx(20, abs=3) and acc[1] > acc[0]
    for png in ("uniform-sweep-throughput.png", "uniform-sweep-latency.png"):
        assert (run / "sim" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_deadlock_exits_1_with_the_cycle_on_one_line(ibqos_cli, dragonfly_runs):
    cp = ibqos_cli(
        "simulate", dragonfly_runs[1], "--load", "1.0", "--buffer-packets", "1", "--warmup-us", "10", "--time-us", "200"
    )
    assert cp.returncode == 1
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ibqos: error: deadlock at load 1.00")
    assert " -> " in lines[0] and "/0" in lines[0]


@pytest.mark.parametrize(
    "args,match",
    [
        (["--traffic", "zipf"], "--traffic: unknown traffic pattern 'zipf'"),
        (["--load", "0"], "--load: 0.0: the offered load must be in (0, 1]"),
        (["--load", "1.2"], "--load: 1.2"),
        (["--sweep", "0.5:0.1:0.1"], "--sweep"),
        (["--traffic", "mix"], "--traffic: --traffic mix needs --classes FILE or a plan"),
    ],
)
def test_bad_options_give_one_error_line(ibqos_cli, star_run, args, match):
    cp = ibqos_cli("simulate", star_run, *args)
    assert cp.returncode == 2
    assert cp.stderr.strip().splitlines() == [cp.stderr.strip()]
    assert match in cp.stderr


def test_missing_tables_give_one_error_line(ibqos_cli, tmp_path):
    star(2, None, vls=2).save(tmp_path / "fabric.json")
    cp = ibqos_cli("simulate", tmp_path)
    assert cp.returncode == 2
    assert len(cp.stderr.strip().splitlines()) == 1
    assert "fabric.json: vlarb: sw0 port 1: missing for a port with 2 operational VLs" in cp.stderr
    assert not (tmp_path / "sim").exists()  # nothing half-written
    cp = ibqos_cli("simulate", tmp_path / "nowhere")
    assert cp.returncode == 2 and "no fabric.json" in cp.stderr


@pytest.mark.fabric
def test_simulate_takes_rate_and_mtu_from_the_dry_runs_plan(ibqos_cli, tmp_path):
    """Issue 15: on an HDR / MTU 2048 dry run, `ibqos simulate RUNDIR` (no --rate, no --mtu)
    simulates at the plan's rate and MTU and reproduces the dry run's class shares; a flag
    overrides and says so."""
    from ibqos.paths import REPO_ROOT

    run = tmp_path / "run"
    r = ibqos_cli("dryrun", REPO_ROOT / "examples" / "two-class.yaml", "--topology", "df42", "--out", run, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads((run / "report.json").read_text())
    dry = {c["sls"][0]: c["simulated_share"] for c in report["classes"]}
    r = ibqos_cli("simulate", run, "--traffic", "mix", "--load", "1.0", "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout)["results"][0]
    assert (res["params"]["rate"], res["params"]["mtu"]) == ("HDR", 2048)
    got = {s["sl"]: s["share_pct"] for s in res["per_sl"]}
    assert all(abs(got[sl] - share) <= 0.5 for sl, share in dry.items()), (got, dry)
    r = ibqos_cli(
        "simulate",
        run,
        "--traffic",
        "mix",
        "--load",
        "1.0",
        "--mtu",
        "4096",
        "--accounting",
        "packet",
        "--time-us",
        "50",
    )
    assert "note: --mtu 4096 overrides the plan's 2048" in r.stdout
    assert "note: --accounting packet overrides the plan's byte" in r.stdout


def test_voq_buffers_is_a_switch_model_option(ibqos_cli, dragonfly_runs, tmp_path):
    """--voq-buffers reaches the core and the saved parameters: with 1-packet buffers the
    per-output model accepts more than the shared one (docs/simulator.md, "Switch model")."""
    acc = {}
    for vb in ("shared", "per-output"):
        out = tmp_path / vb
        cp = ibqos_cli(
            "simulate",
            dragonfly_runs[2],
            "--load",
            "1.0",
            "--buffer-packets",
            "1",
            "--voq-buffers",
            vb,
            "--input-reads",
            "1",
            "--time-us",
            "200",
            "--warmup-us",
            "20",
            "--out",
            out,
            "--json",
        )
        assert cp.returncode == 0, cp.stderr
        doc = json.loads((out / "uniform-1.00.json").read_text())
        assert doc["results"][0]["params"]["voq_buffers"] == vb
        acc[vb] = doc["results"][0]["accepted_pct"]
    assert acc["per-output"] > acc["shared"] + 10
    bad = ibqos_cli("simulate", dragonfly_runs[2], "--voq-buffers", "per-queue")
    assert bad.returncode == 2 and "per-queue" in bad.stderr


def test_a_sweep_of_too_many_points_is_refused_at_once(ibqos_cli, dragonfly_runs, tmp_path):
    """A tiny STEP once meant 10^8 simulations and a hang; now one line before anything runs."""
    out = tmp_path / "out"
    cp = ibqos_cli("simulate", dragonfly_runs[2], "--sweep", "0.1:0.2:1e-9", "--out", out, timeout=60)
    assert cp.returncode == 2, cp.stderr
    assert cp.stderr.strip().splitlines() == [
        "ibqos: error: --sweep: '0.1:0.2:1e-9' gives 100000001 loads; at most 1000: take a larger STEP"
    ]
    assert not out.exists()


@pytest.mark.fabric
def test_a_fat_tree_run_of_another_engine_simulates_with_opensms_port_types(ibqos_cli, tmp_path):
    """redteam: `ibqos simulate RUNDIR` on a fat-tree dry run (a minhop plan) was an internal
    error (NotADragonfly, exit 70), with fabric.json or on the dumps alone: the plan's tables
    were looked up by dragonfly roles. Without dla every switch external port runs the
    terminal tables (qos_swe_*), as the conformance check reads them."""
    import yaml
    from ibqos.paths import REPO_ROOT

    doc = yaml.safe_load((REPO_ROOT / "examples" / "two-class.yaml").read_text())
    doc["fabric"].update(routing="minhop", max_switch_hops=2)
    policy = tmp_path / "minhop.yaml"
    policy.write_text(yaml.safe_dump(doc))
    run = tmp_path / "run"
    topo = "fattree:leaves=3,spines=2,hosts=2"
    r = ibqos_cli("dryrun", policy, "--topology", topo, "--out", run, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    dry = {c["sls"][0]: c["simulated_share"] for c in json.loads((run / "report.json").read_text())["classes"]}
    r = ibqos_cli("simulate", run, "--traffic", "mix", "--load", "1.0", "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    got = {s["sl"]: s["share_pct"] for s in json.loads(r.stdout)["results"][0]["per_sl"]}
    assert all(abs(got[sl] - share) <= 0.5 for sl, share in dry.items()), (got, dry)
    (run / "fabric.json").unlink()  # the dumps alone: VLArb from the plan, by port type
    r = ibqos_cli("simulate", run, "--traffic", "mix", "--load", "1.0", "--json", "--time-us", "50")
    assert r.returncode == 0, r.stderr[-2000:]
    ports = json.loads(r.stdout)["vlarb_overlay"]["ports"]
    assert any(p.startswith("spine0:") and p.endswith("(terminal)") for p in ports), ports
    assert {p.rsplit(" ", 1)[1] for p in ports} == {"(ca)", "(terminal)"}, ports
    # hostile36: the run's dumps directory takes the plan above it, as verify and status do;
    # simulate looked in the directory given alone ('--traffic mix needs --classes FILE or a
    # plan'; with uniform traffic 'dumps carry no VLArb ...'; exit 2)
    dumps = next(run.glob("fabric/sm*/dumps"))
    args = ("--traffic", "mix", "--load", "1.0", "--json", "--time-us", "50", "--out", tmp_path / "sim-dumps")
    r = ibqos_cli("simulate", dumps, *args)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout)["vlarb_overlay"]["ports"] == ports


@pytest.mark.parametrize(
    "merge, says",
    [
        ('{"name": "x"}', "merge.out_dir: Field required"),
        ('{"name": "x", "out_dir": 5, "meta": {}, "plot": false}', "merge.out_dir: Input should be a valid string"),
        ('{"name": "x", "out_dir": "o", "meta": [], "plot": false}', "merge.meta: Input should be a valid dictionary"),
        ('{"name": "../x", "out_dir": "o", "meta": {}, "plot": false}', "merge.name: String should match pattern"),
    ],
)
def test_a_hand_edited_slurm_sweep_is_one_line(ibqos_cli, tmp_path, merge, says):
    """redteam: `simulate --collect` on a sweep.json whose merge was edited by hand ended in an
    internal error (KeyError 'out_dir', TypeError: exit 70), and a name with a '/' wrote
    sim.json outside its directory."""
    merge = merge.replace('"o"', json.dumps(str(tmp_path / "o")))  # never into the test's cwd
    (tmp_path / "sweep.json").write_text(
        f'{{"schema": "ibqos.sweep/1", "fabrics": {{}}, "points": [], "merge": {merge}}}'
    )
    r = ibqos_cli("simulate", "--collect", tmp_path, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith(f"ibqos: error: {tmp_path}/sweep.json: "), r.stderr
    assert says in r.stderr and r.stderr.count("\n") == 1, r.stderr


@pytest.mark.parametrize("job", ["list", "fifo"])
def test_a_job_file_that_is_no_job_id_is_no_job_id(ibqos_cli, tmp_path, job):
    """redteam: job.json holding a list was an internal error (TypeError) in --collect, and a
    FIFO there was waited on forever."""
    merge = {"name": "x", "out_dir": str(tmp_path / "o"), "meta": {}, "plot": False}
    point = {"fabric": "a", "traffic": {}, "params": {}, "load": 0.5}
    doc = {"schema": "ibqos.sweep/1", "fabrics": {}, "merge": merge, "points": [point]}
    (tmp_path / "sweep.json").write_text(json.dumps(doc))
    if job == "fifo":
        os.mkfifo(tmp_path / "job.json")
    else:
        (tmp_path / "job.json").write_text("[]\n")
    r = ibqos_cli("simulate", "--collect", tmp_path, timeout=60)
    assert r.stderr.startswith("ibqos: error: ") and "points have no result" in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and "internal error" not in r.stderr, r.stderr


@pytest.mark.parametrize("result", ["{}", "[]", '{"per_sl": 5}', '"x"'])
def test_a_point_result_that_is_no_result_is_one_line(ibqos_cli, tmp_path, result):
    """redfiles: `simulate --collect` on a sweep whose results/NNNN.json was edited, cut to
    {} or written by something else ended in an internal error (KeyError 'per_sl',
    TypeError: exit 70); it names the result file."""
    merge = {"name": "x", "out_dir": str(tmp_path / "o"), "meta": {}, "plot": False}
    point = {"fabric": "a", "traffic": {}, "params": {}, "load": 0.5}
    doc = {"schema": "ibqos.sweep/1", "fabrics": {}, "merge": merge, "points": [point]}
    (tmp_path / "sweep.json").write_text(json.dumps(doc))
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "0000.json").write_text(result + "\n")
    r = ibqos_cli("simulate", "--collect", tmp_path, timeout=60)
    want = f"ibqos: error: {tmp_path}/results/0000.json: not a simulation result this ibqos wrote ("
    assert r.returncode == 2 and r.stderr.startswith(want) and r.stderr.count("\n") == 1, r.stderr
    assert not (tmp_path / "o").exists()


def test_a_collect_directory_that_is_a_device_is_said_so(ibqos_cli, tmp_path):
    """redfiles: `simulate --collect /dev/null` (or a FIFO; click refuses a regular file)
    said 'no such directory' of a path that is there."""
    os.mkfifo(tmp_path / "fifo")
    for path in (tmp_path / "fifo", "/dev/null"):
        r = ibqos_cli("simulate", "--collect", path, timeout=60)
        assert r.returncode == 2 and r.stderr == f"ibqos: error: {path}: not a directory\n", r.stderr
