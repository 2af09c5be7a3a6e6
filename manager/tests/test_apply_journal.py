"""`ibqos apply` that cannot be raced or worn out (issue 13, defects 1-3; issue 15, defect 2),
against a daemon OpenSM on ibsim: the SIGSTOP race, many consecutive applies in a flat bounded
version store, and a kill -9 at every journal state recovered by the next command."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import subprocess
import time

import pytest
from apply_helpers import (
    apply_cmd,
    child_env,
    live_sm,  # noqa: F401 (fixture)
    make_plan_file,
    managed_texts,
    programmed_equals,
    run_apply,
    run_status,
)

pytestmark = pytest.mark.fabric
# One apply takes ~0.75 s in-process here (two fabric read-backs and a heavy sweep), 1.3 s as
# a command: make test runs 50 in-process, `make test-apply-many` 500 (~6 minutes).
MANY = int(os.environ.get("IBQOS_APPLY_MANY", "50"))


def _state(sm):
    return sm.conf.parent / "ibqos.d"


def _journal(sm) -> dict:
    return json.loads((_state(sm) / "journal.json").read_text())


def _wait_for_line(proc, out_path, needle: str, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in out_path.read_text():
            return True
        if proc.poll() is not None:
            return needle in out_path.read_text()
        time.sleep(0.02)
    return False


def _stop(*procs) -> None:
    for p in procs:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGCONT)
            p.kill()
            p.wait()


def test_sigstop_after_the_flip_serializes_the_second_apply(ibqos_cli, live_sm, tmp_path):
    """Issue 13 defect 1: A stopped right after `configuration v0000 → v0001` must not let B
    run under it; once A resumes and finishes, B applies, and the fabric equals B's plan."""
    h, sm, _, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 25)
    plan_c, path_c = make_plan_file(tmp_path, "c", 30)
    out_a, out_b = tmp_path / "a.out", tmp_path / "b.out"
    with open(out_a, "w") as fa, open(out_b, "w") as fb:
        a = subprocess.Popen(apply_cmd(ibqos_cli, h, sm, path_b), stdout=fa, stderr=subprocess.STDOUT, env=child_env())
        b = None
        try:
            assert _wait_for_line(a, out_a, "configuration v0000 → v0001"), out_a.read_text()
            os.kill(a.pid, signal.SIGSTOP)
            b = subprocess.Popen(
                apply_cmd(ibqos_cli, h, sm, path_c), stdout=fb, stderr=subprocess.STDOUT, env=child_env()
            )
            waiting = _wait_for_line(b, out_b, f"waiting for ibqos apply pid {a.pid}", timeout=30)
            assert waiting, "B did not wait for A: " + out_b.read_text()
            time.sleep(1)
            assert b.poll() is None and _journal(sm)["version"] == "v0001"  # B changed nothing
            os.kill(a.pid, signal.SIGCONT)
            assert a.wait(timeout=120) == 0, out_a.read_text()
            assert b.wait(timeout=120) == 0, out_b.read_text()
        finally:
            _stop(a, *([b] if b else []))
    assert "rolling back" not in out_a.read_text() + out_b.read_text()
    assert "configuration v0001 → v0002" in out_b.read_text()
    assert programmed_equals(h, plan_c)
    assert _journal(sm)["state"] == "verified" and _journal(sm)["version"] == "v0002"
    assert os.readlink(_state(sm) / "current") == "v0002"


def test_many_applies_keep_a_flat_bounded_store(ibqos_cli, live_sm, tmp_path):
    """Issue 13 defect 2 / issue 15 defect 2: each apply nested the store one level deeper
    until 'File name too long'. Now the store stays flat and keeps --keep versions."""
    from ibqos_app.apply.run import Apply, ApplyRequest

    h, sm, _, _ = live_sm
    plans = [make_plan_file(tmp_path, n, s) for n, s in (("b", 25), ("c", 30))]
    state = _state(sm)
    r = run_apply(ibqos_cli, h, sm, plans[0][1], "--keep", "3")  # the first one as the admin runs it
    assert r.returncode == 0 and "v0000 → v0001" in r.stdout, r.stdout + r.stderr
    for i in range(1, MANY):  # the rest in-process: no start-up
        _, path = plans[i % 2]
        lines: list[str] = []
        Apply(ApplyRequest(path, sm.conf, pid=sm.pid, env=h.env, keep=3), echo=lines.append).run()
        assert f"configuration v{i:04d} → v{i + 1:04d}" in lines, (i, lines)
        assert "read back: every port equals the plan" in lines, (i, lines)
    assert programmed_equals(h, plans[(MANY - 1) % 2][0])
    assert not any(state.rglob("ibqos.d")), "a version directory holds another store"
    versions = sorted(p.name for p in state.iterdir() if p.name.startswith("v"))
    # the newest 3, and v0000 (the admin's own files) for good (issue 20)
    assert versions == ["v0000"] + [f"v{n:04d}" for n in range(MANY - 2, MANY + 1)]
    assert os.readlink(sm.conf) == str(state / "current" / "opensm.conf")
    assert os.readlink(state / "current") == f"v{MANY:04d}"
    assert not [p.name for p in state.iterdir() if p.name.startswith(".")]


KILL_POINTS = {
    # journal state the apply dies in: (recovery line, plan the fabric ends on, files end as)
    "intent": ("nothing had gone live; dropped v0001, v0000 stays", "a", "old"),
    "swapped": ("swept, read back and verified v0001; it stays", "b", "new"),
    "swept": ("swept, read back and verified v0001; it stays", "b", "new"),
}


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_kill_at_a_journal_state_is_finished_by_status(ibqos_cli, live_sm, tmp_path, point):
    """Issue 13 defect 3: kill -9 at each journal state; `ibqos status` finds it and finishes
    or undoes it, in one line. 'swapped' is the crash between the swap and the sweep."""
    h, sm, plan_a, _ = live_sm
    plan_b, path_b = make_plan_file(tmp_path, "b", 25)
    old = managed_texts(sm)
    r = run_apply(ibqos_cli, h, sm, path_b, fault=f"journal:{point}")
    assert r.returncode == -9, (r.stdout, r.stderr)
    assert _journal(sm)["state"] == point
    if point in ("intent", "swapped"):
        assert programmed_equals(h, plan_a)  # the new set is not live yet
    s = run_status(ibqos_cli, h, sm)
    line, ends_on, files = KILL_POINTS[point]
    assert s.returncode == 0, s.stdout + s.stderr
    assert s.stdout.splitlines() == [
        f"recovered: found apply of v0001 (pid {_journal(sm)['apply_pid']}) stopped at '{point}': {line}"
    ]
    assert programmed_equals(h, {"a": plan_a, "b": plan_b}[ends_on])
    assert (managed_texts(sm) == old) == (files == "old")
    again = run_status(ibqos_cli, h, sm)  # nothing left to do the second time
    assert again.returncode == 0 and "recovered" not in again.stdout, again.stdout
    assert sm.alive()


@pytest.mark.parametrize("point", ["journal:swapped", "readback"])
def test_a_bug_after_the_swap_rolls_back_in_one_line(ibqos_cli, live_sm, tmp_path, point):
    """A bug (here a KeyError) raised after the swap: before the new sweep's SIGHUP
    (journal:swapped) or after it (readback). Before, only OSError was caught there: the new
    files stayed on disk, unswept or unverified, journal 'swapped' or 'swept', until a status.
    Now it takes the rollback a failure takes: the old files back, swept and proved, one line,
    exit 70."""
    h, sm, plan_a, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 25)
    old = managed_texts(sm)
    r = run_apply(ibqos_cli, h, sm, path_b, fault=f"raise@{point}")
    assert r.returncode == 70, (r.stdout, r.stderr)
    assert r.stderr.splitlines() == [
        f"ibqos: internal error: KeyError: 'injected at {point}' (this is a bug in ibqos; 'ibqos -v ...' "
        "shows where); rolled back to v0000, fabric verified as before"
    ]
    assert _journal(sm)["state"] == "rolled-back"
    assert managed_texts(sm) == old
    assert programmed_equals(h, plan_a)
    s = run_status(ibqos_cli, h, sm)
    assert s.returncode == 0 and "recovered" not in s.stdout, s.stdout + s.stderr
    assert sm.alive()


@pytest.mark.parametrize("point", ["journal:intent", "flip"])
def test_a_bug_before_the_swap_leaves_no_staged_version(ibqos_cli, live_sm, tmp_path, point):
    """A bug (a KeyError) after the new version was staged and the journal said 'intent', before
    the swap. Before, the error went out as it was: v0001 stayed in ibqos.d/ with the journal at
    'intent', for the next status to find ('recovered: ... dropped v0001'). Now the apply drops
    it itself, the journal says 'discarded', one line, exit 70."""
    h, sm, plan_a, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 25)
    old, sweeps = managed_texts(sm), sm.record().heavy_sweeps
    r = run_apply(ibqos_cli, h, sm, path_b, fault=f"raise@{point}")
    assert r.returncode == 70, (r.stdout, r.stderr)
    assert sorted(p.name for p in _state(sm).iterdir() if p.name.startswith(("v", ".v"))) == ["v0000"]
    assert _journal(sm)["state"] == "discarded" and _journal(sm)["version"] == "v0001"
    assert r.stderr.splitlines() == [
        f"ibqos: internal error: KeyError: 'injected at {point}' (this is a bug in ibqos; 'ibqos -v ...' "
        "shows where); stopped before the swap, nothing changed"
    ]
    assert os.readlink(_state(sm) / "current") == "v0000" and managed_texts(sm) == old
    assert sm.record().heavy_sweeps == sweeps and programmed_equals(h, plan_a)
    s = run_status(ibqos_cli, h, sm)
    assert s.returncode == 0 and "recovered" not in s.stdout, s.stdout + s.stderr


def test_kill_after_verified_needs_nothing(ibqos_cli, live_sm, tmp_path):
    h, sm, _, _ = live_sm
    plan_b, path_b = make_plan_file(tmp_path, "b", 25)
    r = run_apply(ibqos_cli, h, sm, path_b, fault="journal:verified")
    assert r.returncode == -9, (r.stdout, r.stderr)
    s = run_status(ibqos_cli, h, sm)
    assert s.returncode == 0, s.stderr
    sha = hashlib.sha256(path_b.read_bytes()).hexdigest()  # the plan applied, by its bytes
    assert s.stdout.splitlines() == [
        f"{sm.conf}: configuration v0001 (plan sha256 {sha}), 2 version(s) kept; last apply v0001: verified"
    ]
    assert programmed_equals(h, plan_b)


def test_kill_between_swap_and_sweep_is_finished_by_the_next_apply(ibqos_cli, live_sm, tmp_path):
    h, sm, _, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 25)
    plan_c, path_c = make_plan_file(tmp_path, "c", 30)
    assert run_apply(ibqos_cli, h, sm, path_b, fault="journal:swapped").returncode == -9
    r = run_apply(ibqos_cli, h, sm, path_c)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[0].startswith("recovered: found apply of v0001")
    assert "verified v0001" in r.stdout and "configuration v0001 → v0002" in r.stdout
    assert programmed_equals(h, plan_c)


def test_kill_during_rollback_is_finished_by_status(ibqos_cli, live_sm, tmp_path):
    h, sm, plan_a, _ = live_sm
    # 16-entry tables: more than ibsim's 8-entry ports hold, so the plugin refuses them
    # inside OpenSM and the apply rolls back; it is killed as the rollback starts.
    _, path_big = make_plan_file(tmp_path, "big", 30, cap=16)
    old = managed_texts(sm)
    r = run_apply(ibqos_cli, h, sm, path_big, fault="journal:rollback")
    assert r.returncode == -9, (r.stdout, r.stderr)
    s = run_status(ibqos_cli, h, sm)
    assert s.returncode == 0, s.stdout + s.stderr
    assert "stopped at 'rollback': finished the rollback to v0000, fabric verified as before" in s.stdout
    assert managed_texts(sm) == old
    assert programmed_equals(h, plan_a)


@pytest.mark.parametrize(
    "fault", [OSError(errno.ENOSPC, "No space left on device", "before.fabric.json"), KeyError("injected")]
)
def test_a_failure_between_staging_and_the_journal_leaves_no_staged_version(live_sm, tmp_path, monkeypatch, fault):
    """The version directory is written whole, then saving the fabric read before it (the
    journal's before.fabric.json) fails, /etc full or a bug, before the journal says 'intent'.
    Before, the cleanup looked for the journal's entry, found none and left v0001 in ibqos.d/
    with no journal line naming it, for no recovery to find. Now it goes too."""
    from ibqos.apply.journal import Journal
    from ibqos.errors import ExternalError, InternalError
    from ibqos_app.apply.run import Apply, ApplyRequest

    h, sm, plan_a, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 25)
    old = managed_texts(sm)

    def failing(self, fabric) -> None:
        raise fault

    monkeypatch.setattr(Journal, "save_before", failing)
    with pytest.raises(ExternalError if isinstance(fault, OSError) else InternalError) as e:
        Apply(ApplyRequest(path_b, sm.conf, pid=sm.pid, env=h.env), echo=lambda line: None).run()
    assert str(e.value).endswith("stopped before the swap, nothing changed"), e.value
    assert sorted(p.name for p in _state(sm).iterdir() if p.name.startswith(("v", ".v"))) == ["v0000"]
    assert os.readlink(_state(sm) / "current") == "v0000" and managed_texts(sm) == old
    assert programmed_equals(h, plan_a)
