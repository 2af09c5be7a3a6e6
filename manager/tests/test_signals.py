"""SIGTERM (what `timeout`, Slurm and systemd send) and SIGHUP stop `ibqos dryrun` and `ibqos
apply` as Ctrl-C does: every child stopped by PID (ibsim and OpenSM included), nothing
half-written, exit 128+N; apply rolls back or keeps a verified version and says which."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from apply_helpers import (  # noqa: F401 (fixture)
    apply_cmd,
    as_from_a_terminal,
    child_env,
    live_sm_patched,
    make_plan_file,
    managed_texts,
    programmed_equals,
)
from ibqos.paths import REPO_ROOT
from ibqos.proc import pid_alive, proc_stat, wait_until
from ibqos_sim.harness import sock_prefix_for

pytestmark = pytest.mark.fabric


def _procs() -> dict[int, tuple[int, bytes, str]]:
    """pid -> (parent pid, environ, comm) of every live process."""
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        st = proc_stat(int(d.name))
        try:
            env, comm = (d / "environ").read_bytes(), (d / "comm").read_text().strip()
        except OSError:
            continue
        if st is not None and st[0] != "Z":
            out[int(d.name)] = (st[1], env, comm)
    return out


def _on_fabric_of(pid: int) -> dict[int, str]:
    """Processes on a fabric that process `pid` created (the harness puts its PID in the
    IBSIM_SOCKNAME): ibsim, OpenSM, diags."""
    tag = b"IBSIM_SOCKNAME=" + sock_prefix_for(pid).encode()
    return {p: comm for p, (_, env, comm) in _procs().items() if tag in env}


def _children(pid: int) -> list[int]:
    return [p for p, (ppid, _, _) in _procs().items() if ppid == pid]


def _start(cmd: list[str], out: Path, nohup: bool = False) -> subprocess.Popen:
    with open(out, "w") as f:
        return subprocess.Popen(
            as_from_a_terminal(cmd, nohup),
            stdout=f,
            stderr=subprocess.STDOUT,
            env=child_env(),
            stdin=subprocess.DEVNULL,
        )


def _stop_with(p: subprocess.Popen, sig: int) -> int:
    p.send_signal(sig)
    try:
        return p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


# ---- dryrun --------------------------------------------------------------------------------


def _descendants(pid: int) -> dict[int, str]:
    """pid -> comm of every process below `pid`, from the kernel's children lists: a few reads
    a poll, where a scan of /proc (_procs) took longer on a loaded machine than the dry run's
    OpenSM lives (about a second), and the poll missed it."""
    found: dict[int, str] = {}
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                kids = [int(k) for k in task.read_text().split()]
            except OSError:
                continue
            for kid in kids:
                try:
                    found[kid] = Path(f"/proc/{kid}/comm").read_text().strip()
                except OSError:
                    continue
                todo.append(kid)
    return found


def _ibsim_runs(pid: int) -> bool:
    return "ibsim" in _descendants(pid).values()


def _opensm_runs(pid: int) -> bool:
    return "opensm" in _descendants(pid).values()


def _simulating(out: Path):
    return lambda pid: "verify:" in out.read_text()


@pytest.mark.parametrize(
    "point,sig",
    [
        ("ibsim", signal.SIGTERM),
        ("opensm", signal.SIGTERM),
        ("simulate", signal.SIGTERM),
        ("opensm", signal.SIGHUP),
    ],
)
def test_dryrun_stopped_by_a_signal_leaves_no_process_and_no_half_file(ibqos_cli, tmp_path, half_written, point, sig):
    log, out = tmp_path / "out.txt", tmp_path / "run"
    cmd = [*ibqos_cli.argv, "dryrun", str(REPO_ROOT / "examples" / "two-class.yaml"), "--topology", "df42"]
    p = _start([*cmd, "--out", str(out), "--sim-time", "3000"], log)
    ready = {"ibsim": _ibsim_runs, "opensm": _opensm_runs, "simulate": _simulating(log)}[point]
    try:
        wait_until(lambda: ready(p.pid) or p.poll() is not None, timeout=120, interval=0.01, what=point)
        assert p.poll() is None, f"the dry run ended before {point}: {log.read_text()}"
        on_fabric = _on_fabric_of(p.pid)
        rc = _stop_with(p, sig)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    text = log.read_text()
    assert rc == 128 + sig, text
    assert f"ibqos: interrupted by {signal.Signals(sig).name}" in text and "Traceback" not in text
    assert on_fabric, "nothing ran on the fabric when the signal came"
    assert _on_fabric_of(p.pid) == {}, f"left running: {_on_fabric_of(p.pid)}"
    assert not any(pid_alive(q) for q in on_fabric)
    assert half_written(out) == []


def test_a_dryrun_under_nohup_outlives_its_terminal(ibqos_cli, tmp_path):
    """`nohup ibqos dryrun … &` ignores SIGHUP: the run goes on to its verdict, and its
    OpenSM and ibsim are stopped as after any run."""
    log, out = tmp_path / "out.txt", tmp_path / "run"
    cmd = [*ibqos_cli.argv, "dryrun", str(REPO_ROOT / "examples" / "two-class.yaml"), "--topology", "df42"]
    p = _start([*cmd, "--out", str(out), "--sim-time", "3000"], log, nohup=True)
    try:
        wait_until(lambda: _opensm_runs(p.pid) or p.poll() is not None, timeout=120, interval=0.01, what="opensm")
        assert p.poll() is None, f"the dry run ended before OpenSM ran: {log.read_text()}"
        on_fabric = _on_fabric_of(p.pid)
        rc = _stop_with(p, signal.SIGHUP)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    text = log.read_text()
    assert rc == 0, text
    assert "interrupted" not in text and "PASS" in text and (out / "report.html").is_file()
    assert not any(pid_alive(q) for q in on_fabric)


# ---- apply ---------------------------------------------------------------------------------


def test_apply_stopped_before_the_swap_changes_nothing(ibqos_cli, live_sm_patched, tmp_path, half_written):
    h, sm, plan_a, _ = live_sm_patched
    _, path_b = make_plan_file(tmp_path, "b", 25)
    old = managed_texts(sm)
    log = tmp_path / "apply.txt"
    p = _start(apply_cmd(ibqos_cli, h, sm, path_b), log)
    wait_until(lambda: _children(p.pid) or p.poll() is not None, timeout=60, interval=0.005, what="apply's child")
    kids = _children(p.pid)
    rc = _stop_with(p, signal.SIGTERM)
    text = log.read_text()
    assert rc == 143, text
    assert "interrupted by SIGTERM before the swap: nothing changed" in text, text
    assert not any(pid_alive(k) for k in kids)
    assert managed_texts(sm) == old and programmed_equals(h, plan_a)
    assert half_written(sm.conf.parent) == []
    assert sm.alive()


@pytest.mark.parametrize(
    "point,sig",
    [("sweep", signal.SIGTERM), ("readback", signal.SIGTERM), ("sweep", signal.SIGHUP)],  # SIGHUP: a closed ssh
)
def test_apply_stopped_after_the_swap_rolls_back_or_keeps_a_verified_version(
    ibqos_cli, live_sm_patched, tmp_path, half_written, point, sig
):
    h, sm, plan_a, _ = live_sm_patched
    plan_b, path_b = make_plan_file(tmp_path, "b", 25)
    old = managed_texts(sm)
    log = tmp_path / "apply.txt"
    p = _start(apply_cmd(ibqos_cli, h, sm, path_b), log)
    mark = {"sweep": "configuration v", "readback": "heavy sweep done"}[point]
    wait_until(lambda: mark in log.read_text() or p.poll() is not None, timeout=120, interval=0.005, what=mark)
    rc = _stop_with(p, sig)
    text = log.read_text()
    name = signal.Signals(sig).name
    assert rc == 128 + sig, text
    said = [ln for ln in text.splitlines() if ln.startswith(f"interrupted by {name}")]
    assert len(said) == 1, text
    if point == "sweep" or "rolled back" in said[0]:
        assert said[0] == f"interrupted by {name} after the swap: rolled back to v0000, fabric verified as before"
        assert managed_texts(sm) == old and programmed_equals(h, plan_a)
    else:  # the verification ended before the signal came: the new version stays, whole
        assert said[0] == f"interrupted by {name} after v0001 was verified: it stays", text
        assert managed_texts(sm) != old and programmed_equals(h, plan_b)
    assert half_written(sm.conf.parent) == []
    assert sm.alive()
    # the journal says the apply is over: the next one starts clean
    again = subprocess.run(
        apply_cmd(ibqos_cli, h, sm, path_b), capture_output=True, text=True, timeout=300, env=child_env()
    )
    assert again.returncode == 0 and "recovered" not in again.stdout, again.stdout + again.stderr
    assert programmed_equals(h, plan_b)
    assert os.path.exists(sm.conf)


def test_a_signal_ignored_by_the_parent_stays_ignored():
    """`nohup ibqos …` (SIGHUP ignored before exec) outlives its terminal: install() keeps it."""
    import sys

    code = (
        "import signal as s; from ibqos import interrupt as i; i.install();"
        "print(s.getsignal(s.SIGHUP) == s.SIG_IGN, s.getsignal(s.SIGTERM) == i._handler)"
    )
    r = subprocess.run(
        ["nohup", sys.executable, "-c", code], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert r.stdout.split() == ["True", "True"], r.stdout + r.stderr
