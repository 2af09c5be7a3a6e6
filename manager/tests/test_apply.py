"""`ibqos apply` against OpenSM running as a daemon on ibsim: change, rollback, kill at each step."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ibqos.apply.run import STEPS
from ibqos.conformance import diff_programmed, expected_from_plan
from ibqos.fabric.live import read_live
from ibqos.paths import REPO_ROOT
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from ibqos.render import render_plan
from ibqos_sim.harness import Harness
from ibqos_sim.topology import dragonfly

pytestmark = pytest.mark.fabric
IBQOS = str(Path(sys.executable).parent / "ibqos")
MANAGED = ("opensm.conf", "qos-policy.conf", "plugin-tables.conf")


def _policy(tmp: Path, name: str, share: int, cap: int = 8) -> Path:
    text = (REPO_ROOT / "examples" / "two-class.yaml").read_text()
    text = text.replace("bandwidth: 40", f"bandwidth: {share}").replace(
        "vlarb_cap: {high: 8, low: 8}", f"vlarb_cap: {{high: {cap}, low: {cap}}}")
    p = tmp / f"{name}.yaml"
    p.write_text(text)
    return p


def _plan(tmp: Path, name: str, share: int, cap: int = 8):
    plan = make_plan(load_policy(_policy(tmp, name, share, cap)))
    path = tmp / f"{name}.plan.json"
    plan.save(path)
    return plan, path


@pytest.fixture
def live_sm(tmp_path):
    """OpenSM with the dla plugin running plan A as a daemon on a 12-CA dragonfly."""
    plan_a, path_a = _plan(tmp_path, "a", 40)
    files = render_plan(plan_a, tmp_path / "cfg-a")
    net = dragonfly(3, 1, 1).write_net(tmp_path / "fabric.net")
    with Harness(net, run_dir=tmp_path / "run") as h:
        sm = h.start_sm(engine="dla,minhop", plugin=True, conf_files=[files["opensm.conf"]])
        assert diff_programmed(read_live(h.env), expected_from_plan(plan_a)) == []
        yield h, sm, plan_a, path_a


def _apply(h, sm, plan_path, *extra, fault=None):
    env = dict(os.environ)
    if fault:
        env["IBQOS_APPLY_FAULT"] = fault
    return subprocess.run([IBQOS, "apply", str(plan_path), "--opensm-conf", str(sm.conf),
                           "--pid", str(sm.pid), "--sim-socket", h.sock, *extra],
                          capture_output=True, text=True, timeout=300, env=env)


def _managed_texts(sm) -> tuple[str, ...]:
    from ibqos.osmconf import parse
    opts = parse(sm.conf.read_text())
    return (sm.conf.read_text(), Path(opts["qos_policy_file"]).read_text(),
            Path(opts["event_plugin_options"]).read_text())


def test_plan_a_to_plan_b_is_applied_and_read_back_equal(live_sm, tmp_path):
    h, sm, plan_a, _ = live_sm
    plan_b, path_b = _plan(tmp_path, "b", 25)
    dry = _apply(h, sm, path_b, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "+vlarb" in dry.stdout and "-vlarb" in dry.stdout      # the table lines change
    assert diff_programmed(read_live(h.env), expected_from_plan(plan_a)) == []   # touched nothing
    r = _apply(h, sm, path_b)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "the fabric equals the plan" in r.stdout
    assert diff_programmed(read_live(h.env), expected_from_plan(plan_b)) == []
    assert sm.alive()
    assert sm.conf.is_symlink()          # the managed files now live in a versioned set


def test_rejected_tables_are_rolled_back(live_sm, tmp_path):
    h, sm, plan_a, _ = live_sm
    # 16-entry tables: valid for the plan and the table parser, but more than ibsim's
    # 8-entry ports hold, so the plugin refuses them inside OpenSM.
    _, path_big = _plan(tmp_path, "big", 30, cap=16)
    before = _managed_texts(sm)
    r = _apply(h, sm, path_big)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "rolled back" in r.stderr and "fabric verified as before" in r.stderr
    assert "Traceback" not in r.stderr
    assert _managed_texts(sm) == before
    assert diff_programmed(read_live(h.env), expected_from_plan(plan_a)) == []
    assert sm.alive()


def test_a_second_apply_waits_for_the_lock(live_sm, tmp_path):
    import fcntl
    h, sm, _, _ = live_sm
    _, path_b = _plan(tmp_path, "b", 25)
    state = sm.conf.resolve().parent / "ibqos.d"
    state.mkdir(exist_ok=True)
    with open(state / "apply.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        r = _apply(h, sm, path_b)
    assert r.returncode == 3 and "another ibqos apply" in r.stderr


@pytest.mark.parametrize("step", STEPS)
def test_killed_at_any_step_leaves_old_or_new_files_whole(live_sm, tmp_path, step):
    h, sm, _, _ = live_sm
    _, path_b = _plan(tmp_path, "b", 25)
    old = _managed_texts(sm)
    r = _apply(h, sm, path_b, fault=step)
    assert r.returncode == -9, (step, r.stdout, r.stderr)
    now = _managed_texts(sm)
    # a clean apply from the same start gives the new set
    if now != old:
        new_run = _apply(h, sm, path_b)
        assert new_run.returncode == 0, new_run.stderr
        assert _managed_texts(sm) == now, f"killed at {step}: files were a mix of old and new"
    else:
        assert step in STEPS[:STEPS.index("flip") + 1], f"killed at {step} after the flip, files still old"
