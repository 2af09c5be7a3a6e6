"""`ibqos apply` against OpenSM running as a daemon on ibsim: change, rollback, kill at each step."""

from __future__ import annotations

import pytest
from apply_helpers import live_sm, make_plan_file, managed_texts, run_apply  # noqa: F401 (fixture)
from ibqos.conformance import diff_programmed, expected_from_plan
from ibqos.fabric.live import read_live
from ibqos_app.apply.run import STEPS

pytestmark = pytest.mark.fabric
MANAGED = ("opensm.conf", "qos-policy.conf", "plugin-tables.conf")
_plan, _apply, _managed_texts = make_plan_file, run_apply, managed_texts


def test_plan_a_to_plan_b_is_applied_and_read_back_equal(ibqos_cli, live_sm, tmp_path):
    h, sm, plan_a, _ = live_sm
    plan_b, path_b = _plan(tmp_path, "b", 25)
    dry = _apply(ibqos_cli, h, sm, path_b, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "+vlarb" in dry.stdout and "-vlarb" in dry.stdout  # the table lines change
    assert diff_programmed(read_live(h.env), expected_from_plan(plan_a)) == []  # touched nothing
    r = _apply(ibqos_cli, h, sm, path_b)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "the fabric equals the plan" in r.stdout
    assert diff_programmed(read_live(h.env), expected_from_plan(plan_b)) == []
    assert sm.alive()
    assert sm.conf.is_symlink()  # the managed files now live in a versioned set


def test_rejected_tables_are_rolled_back(ibqos_cli, live_sm, tmp_path):
    h, sm, plan_a, _ = live_sm
    # 16-entry tables: valid for the plan and the table parser, but more than ibsim's
    # 8-entry ports hold, so the plugin refuses them inside OpenSM.
    _, path_big = _plan(tmp_path, "big", 30, cap=16)
    before = _managed_texts(sm)
    r = _apply(ibqos_cli, h, sm, path_big)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "rolled back" in r.stderr and "fabric verified as before" in r.stderr
    assert "Traceback" not in r.stderr
    assert _managed_texts(sm) == before
    assert diff_programmed(read_live(h.env), expected_from_plan(plan_a)) == []
    assert sm.alive()


def test_a_second_apply_waits_for_the_lock(ibqos_cli, live_sm, tmp_path):
    import fcntl

    h, sm, _, _ = live_sm
    _, path_b = _plan(tmp_path, "b", 25)
    state = sm.conf.parent / "ibqos.d"
    state.mkdir(exist_ok=True)
    with open(state / "apply.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        r = _apply(ibqos_cli, h, sm, path_b, "--lock-timeout", "1")
    assert "waiting for ibqos apply" in r.stdout
    assert r.returncode == 3 and "another ibqos apply" in r.stderr and "waited 1 s" in r.stderr


@pytest.mark.parametrize("step", STEPS)
def test_killed_at_any_step_leaves_old_or_new_files_whole(ibqos_cli, live_sm, tmp_path, step):
    h, sm, _, _ = live_sm
    _, path_b = _plan(tmp_path, "b", 25)
    old = _managed_texts(sm)
    r = _apply(ibqos_cli, h, sm, path_b, fault=step)
    assert r.returncode == -9, (step, r.stdout, r.stderr)
    now = _managed_texts(sm)
    # a clean apply from the same start gives the new set
    if now != old:
        new_run = _apply(ibqos_cli, h, sm, path_b)
        assert new_run.returncode == 0, new_run.stderr
        assert _managed_texts(sm) == now, f"killed at {step}: files were a mix of old and new"
    else:
        assert step in STEPS[: STEPS.index("flip") + 1], f"killed at {step} after the flip, files still old"
