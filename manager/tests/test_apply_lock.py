"""The apply lock (ibqos.apply.lock) exists only while it is held. Before, every apply and every
recovering `status --opensm-conf` left `ibqos.d/apply.lock` behind with its PID, and an apply
refused before it wrote anything, on a configuration never applied, left an `ibqos.d/` holding
only that file: the PID of a process long gone, which reads as a crashed apply. Real OpenSM on
ibsim for the applies; the waiters' exclusion in-process (flock conflicts between two open
file descriptions of one process as between processes)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from apply_helpers import live_sm, make_plan_file, run_apply, run_status  # noqa: F401 (fixture)
from ibqos.apply.lock import LOCK_FILE, LockError, apply_lock


def _entries(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


@pytest.mark.fabric
def test_a_refused_apply_leaves_no_lock_and_no_state_directory_and_an_apply_no_lock(ibqos_cli, live_sm, tmp_path):
    h, sm, _, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    state = sm.conf.parent / "ibqos.d"
    good = sm.conf.read_text()
    before = _entries(sm.conf.parent)
    assert "ibqos.d" not in before  # never applied
    # refused by OpenSM's parser inside the lock (exit 2), then by the lmc check (exit 3)
    refusals = (("sweep_intervall 10", 2, "sweep_intervall: OpenSM 3.3.23 does not know"), ("lmc 1", 3, "lmc is '1'"))
    for line, rc, says in refusals:
        sm.conf.write_text(good + line + "\n")
        r = run_apply(ibqos_cli, h, sm, path_b)
        assert r.returncode == rc and says in r.stderr, r.stdout + r.stderr
        assert _entries(sm.conf.parent) == before, line  # no ibqos.d/, no ibqos.d/apply.lock
        r = run_status(ibqos_cli, h, sm)
        assert (r.returncode, r.stdout.strip()) == (0, f"{sm.conf}: not managed by ibqos apply yet"), r.stderr
    sm.conf.write_text(good)
    r = run_apply(ibqos_cli, h, sm, path_b)
    assert r.returncode == 0, r.stdout + r.stderr
    assert LOCK_FILE not in _entries(state)
    kept = _entries(state)
    # refused on a managed configuration: ibqos.d/ as it was, no lock; status says what is there
    sm.conf.write_text(sm.conf.read_text() + "# edited\n")  # through the link: TAMPERED, exit 1
    r = run_apply(ibqos_cli, h, sm, path_b)
    assert r.returncode == 1 and "TAMPERED" in r.stderr, r.stdout + r.stderr
    assert _entries(state) == kept
    r = run_status(ibqos_cli, h, sm)
    assert r.returncode == 1 and r.stdout.startswith(f"{sm.conf}: configuration v0001"), r.stdout + r.stderr
    assert _entries(state) == kept


@pytest.mark.fabric
def test_a_killed_applys_lock_file_is_harmless_and_the_recovery_removes_it(ibqos_cli, live_sm, tmp_path):
    """SIGKILL runs no release: the file stays, with the killed PID, as a sign of the crash
    (the journal says what was left); the kernel dropped the flock, so `status` takes it,
    finishes the apply and removes it."""
    h, sm, _, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    lock = sm.conf.parent / "ibqos.d" / LOCK_FILE
    assert run_apply(ibqos_cli, h, sm, path_b, fault="journal:swapped").returncode == -9
    assert lock.is_file()
    r = run_status(ibqos_cli, h, sm)
    assert r.returncode == 0 and r.stdout.startswith("recovered: "), r.stdout + r.stderr
    assert not lock.exists()


def test_a_waiter_whose_holder_removed_the_file_locks_the_path_again_not_the_removed_file(tmp_path):
    """The holder removes the file before it lets go: a waiter blocked on that file's flock
    then holds a file no longer at the path, and a third apply would create a new one and hold
    it too. The waiter opens the path again, so the third one is refused while it holds."""
    state = tmp_path / "ibqos.d"
    state.mkdir()
    second_in, second_out = threading.Event(), threading.Event()
    waiting = threading.Event()
    errors: list[BaseException] = []

    def second() -> None:
        try:
            with apply_lock(state, timeout=30, echo=lambda line: waiting.set()):
                second_in.set()
                second_out.wait(30)
        except BaseException as e:  # noqa: BLE001 (said by the main thread)
            errors.append(e)
            second_in.set()

    with apply_lock(state):
        t = threading.Thread(target=second)
        t.start()
        assert waiting.wait(30)  # blocked on the first one's file
    assert second_in.wait(30) and not errors, errors
    try:
        assert (state / LOCK_FILE).is_file()  # the second one's, at the path
        with pytest.raises(LockError) as e, apply_lock(state, timeout=0):
            pass
        assert e.value.holder is not None
    finally:
        second_out.set()
        t.join(30)
    assert not (state / LOCK_FILE).exists()
    with apply_lock(state, timeout=0):  # free again
        pass


def test_a_waiter_stopped_before_it_locks_the_file_it_made_leaves_nothing(tmp_path, monkeypatch):
    """A first apply on a configuration never applied makes ibqos.d/ and the lock file, then
    flocks it. A signal between the two (here: raised as the flock is asked for) left both,
    the file with no PID in it; the waiter's _leave removes what it made, under the flock."""
    from ibqos.apply import lock as lock_module

    state = tmp_path / "ibqos.d"

    def signalled(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(lock_module, "_take", signalled)
    with pytest.raises(KeyboardInterrupt), apply_lock(state, timeout=30):
        pass
    assert not state.exists(), _entries(state)


def test_a_waiter_that_made_ibqos_d_again_after_its_holder_removed_it_removes_it(tmp_path):
    """The first apply made a fresh ibqos.d/ and was refused: it removes the file and the
    directory at its release. The apply waiting meanwhile makes both again and takes the lock;
    stopped by SIGINT before it writes anything, it removed its file but left ibqos.d/, empty
    (it had found the directory there when it began). Now it knows it made it: nothing left."""
    state = tmp_path / "ibqos.d"
    holding, waiting = threading.Event(), threading.Event()
    release = threading.Event()

    def first() -> None:
        with apply_lock(state):
            holding.set()
            release.wait(30)

    t = threading.Thread(target=first)
    t.start()
    try:
        assert holding.wait(30)
        threading.Thread(target=lambda: waiting.wait(30) and release.set()).start()
        with pytest.raises(KeyboardInterrupt), apply_lock(state, timeout=30, echo=lambda line: waiting.set()):
            assert (state / LOCK_FILE).read_text() == f"{os.getpid()}\n"
            os.kill(os.getpid(), signal.SIGINT)  # Python's handler: KeyboardInterrupt here
            time.sleep(5)
    finally:
        release.set()
        t.join(30)
    assert not state.exists(), _entries(state)
