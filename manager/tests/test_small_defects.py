"""Issue 15's smaller defects, one regression test each, through the console script as an admin
runs it (each failed on the main of the day the issue was filed)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from ibqos.paths import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples"
sys.path.insert(0, str(REPO_ROOT / "ci-sim" / "tests"))


@pytest.fixture(scope="module")
def dla_run(tmp_path_factory):
    """dla on a 42-CA dragonfly with the two-class plan's configuration: dumps + plan.json."""
    from ibqos.planner import make_plan
    from ibqos.policy import load_policy
    from ibqos.render import render_plan
    from ibqos_sim.harness import Harness
    from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly

    d = tmp_path_factory.mktemp("dla")
    plan = make_plan(load_policy(EXAMPLES / "two-class.yaml"))
    plan.save(d / "plan.json")
    files = render_plan(plan, d / "config")
    net = dragonfly(*DRAGONFLY_SIZES[42]).write_net(d / "f.net")
    with Harness(net, run_dir=d / "fabric") as h:
        run = h.run_sm(engine="dla,minhop", plugin=True, conf_files=[files["opensm.conf"]])
    return d, run.dumps, plan


@pytest.mark.fabric
def test_verify_ibdmchk_takes_a_relative_dumps_path(ibqos_cli, dla_run):
    d, dumps, _ = dla_run
    r = ibqos_cli("verify", os.path.relpath(dumps, d), "--ibdmchk", "--sl", "0", cwd=d)
    assert r.returncode == 0, r.stdout[-800:] + r.stderr[-800:]
    assert "ibdmchk: no credit loops" in r.stdout and "agrees" in r.stdout


@pytest.mark.fabric
def test_verify_checks_every_class_of_the_plan_beside_the_dumps(ibqos_cli, dla_run):
    d, _, plan = dla_run
    r = ibqos_cli("verify", d)
    assert r.returncode == 0, r.stdout[-800:] + r.stderr[-800:]
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("SLs from"))
    for c in plan.classes:
        assert f"{c.sls[0]} ({c.name}: ok)" in line, line
    # --sl still means one SL, as asked, and says that it overrides the plan's
    r = ibqos_cli("verify", d, "--sl", "0")
    assert r.returncode == 0 and "SLs from" not in r.stdout
    assert f"note: --sl 0 overrides the SLs of the plan beside the dumps ({d / 'plan.json'})" in r.stderr


@pytest.mark.fabric
def test_fabric_up_twice_refuses_instead_of_orphaning_ibsim(ibqos_cli, tmp_path):
    run_dir = tmp_path / "f"
    try:
        r = ibqos_cli("fabric", "up", "--topology", "df42", "--run-dir", run_dir)
        assert r.returncode == 0, r.stderr
        first = json.loads((run_dir / "harness.json").read_text())["ibsim_pid"]
        r = ibqos_cli("fabric", "up", "--topology", "df42", "--run-dir", run_dir)
        assert r.returncode == 2 and "already up" in r.stderr and str(first) in r.stderr
        assert json.loads((run_dir / "harness.json").read_text())["ibsim_pid"] == first
        assert Path(f"/proc/{first}").exists()
    finally:
        ibqos_cli("fabric", "down", "--run-dir", run_dir)
    assert not Path(f"/proc/{first}").exists() or b"ibsim" not in Path(f"/proc/{first}/cmdline").read_bytes()


@pytest.mark.fabric
def test_piped_dryrun_reports_each_stage_as_it_ends(ibqos_cli, tmp_path):
    """Piped, the dry run says each stage when it ends, not everything at exit (rich draws
    its progress bars only at the end when stderr is not a terminal)."""
    p = subprocess.Popen(
        [*ibqos_cli.argv, "dryrun", EXAMPLES / "two-class.yaml", "--topology", "df72", "--out", tmp_path / "dr"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = p.stderr.readline()
        still_running = p.poll() is None
        p.communicate(timeout=600)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert first.startswith("launch: df72 ("), first  # the fabric first: its VLArb capacity decides the plan
    assert still_running
    assert p.returncode == 0


def test_rich_markup_in_file_names_is_printed_as_written(ibqos_cli, tmp_path):
    policy = tmp_path / "p[bold].yaml"
    policy.write_text((EXAMPLES / "two-class.yaml").read_text())
    r = ibqos_cli("plan", policy, "-o", tmp_path / "o[red].json", env=dict(os.environ, COLUMNS="200"))
    assert r.returncode == 0, r.stderr
    assert "o[red].json" in r.stdout


def test_fabric_check_results_are_wrapped_not_cut(capsys):
    from ibqos_app.cli.dryrun import _print_verdict

    words = " ".join(f"w{i}" for i in range(90))  # about 350 characters
    dr = SimpleNamespace(
        cfg=SimpleNamespace(policy=Path("p.yaml"), out=Path("out")),
        s=SimpleNamespace(
            faults=[], topology_name="df42", verdicts=[], notes=[], plan=SimpleNamespace(share_tolerance_pp=2.0)
        ),
        ok=False,
        fabric_checks=lambda: [{"check": "routing engine", "ok": False, "result": words}],
    )
    _print_verdict(dr)
    out = capsys.readouterr().out
    assert "w89" in out and "w0 " in out


def test_outputs_are_readable_as_the_umask_says(ibqos_cli, tmp_path):
    old = os.umask(0o022)
    try:
        assert ibqos_cli("plan", EXAMPLES / "two-class.yaml", "-o", tmp_path / "p.json").returncode == 0
        assert ibqos_cli("render", tmp_path / "p.json", "-o", tmp_path / "cfg").returncode == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "p.json").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "cfg").stat().st_mode) == 0o755
    for f in (tmp_path / "cfg").iterdir():
        assert stat.S_IMODE(f.stat().st_mode) == 0o644, f


def test_adopted_config_keeps_its_mode(tmp_path):
    from ibqos.apply.confset import ConfigSet
    from ibqos.apply.version_meta import VersionMeta

    conf = tmp_path / "opensm.conf"
    conf.write_text("qos TRUE\n")
    conf.chmod(0o644)
    policy = tmp_path / "qos-policy.conf"
    policy.write_text("")
    policy.chmod(0o640)
    cs = ConfigSet.beside(conf, {"opensm.conf": conf, "qos-policy.conf": policy})
    cs.adopt()
    # stored versions are read-only: the admin's mode less its write bits, never more readable
    assert conf.is_symlink() and stat.S_IMODE(conf.stat().st_mode) == 0o444
    assert stat.S_IMODE(policy.stat().st_mode) == 0o440
    cs.flip(cs.stage({"opensm.conf": "qos TRUE\nqos_max_vls 8\n", "qos-policy.conf": ""}, VersionMeta()))
    assert stat.S_IMODE(conf.stat().st_mode) == 0o444  # and the next version too
    assert stat.S_IMODE(policy.stat().st_mode) == 0o440


def _sim_run(tmp_path) -> Path:
    """A run directory the simulator can replay: a 4-CA switch with seed 002's tables."""
    from ibqos.planner import make_plan
    from ibqos.policy import load_policy
    from simfabrics import config_a, star

    d = tmp_path / "run"
    d.mkdir()
    star(4, config_a()).save(d / "fabric.json")
    make_plan(load_policy(EXAMPLES / "seed002-config-a.yaml")).save(d / "plan.json")
    return d


def test_mix_sweep_offers_each_class_its_share_times_the_load(ibqos_cli, tmp_path):
    d = _sim_run(tmp_path)
    r = ibqos_cli(
        "simulate", d, "--traffic", "mix", "--sweep", "0.2:1.0:0.8", "--time-us", "100", "--warmup-us", "20", "--json"
    )
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)["results"]
    assert [x["load"] for x in res] == pytest.approx([0.2, 1.0])
    assert res[0]["accepted_pct"] == pytest.approx(20, abs=2)
    assert res[1]["accepted_pct"] > 80
    # classes that all saturate make a sweep meaningless: said, not run
    cls = tmp_path / "c.yaml"
    cls.write_text("- {name: a, sl: 0, msg_bytes: 4096, rate: saturate}\n")
    r = ibqos_cli("simulate", d, "--traffic", "mix", "--classes", cls, "--sweep", "0.2:1.0:0.8")
    assert r.returncode == 2 and "load changes nothing" in r.stderr


def test_simulated_time_is_bounded(ibqos_cli, tmp_path):
    d = _sim_run(tmp_path)
    r = ibqos_cli("simulate", d, "--time-us", "1e12", timeout=60)
    assert r.returncode == 2 and "--time-us" in r.stderr and "Traceback" not in r.stderr
