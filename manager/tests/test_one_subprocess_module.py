"""Every child process of the product goes through ibqos.proc (the developers' guide, "One subprocess
module"): its own session, stopped by killing its process group. Checked on the source of
every product package (pyproject's wheel.packages), imports inside functions included."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import tomllib
from pathlib import Path

import pytest
from ibqos import interrupt
from ibqos.proc import pid_alive, run_command, start_daemon, stop_group, wait_until

ROOT = Path(__file__).resolve().parents[2]
OWNER = ROOT / "manager" / "ibqos" / "proc.py"
# a process-starting module other than subprocess is as much a bypass
STARTERS = {"subprocess", "pty", "asyncio.subprocess"}
# os functions that start or replace a process
OS_STARTERS = {"system", "popen", "spawnl", "spawnlp", "spawnv", "spawnvp", "posix_spawn", "posix_spawnp"}


def _product_files() -> list[Path]:
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["scikit-build"]["wheel"]["packages"]
    return sorted(f for p in packages for f in (ROOT / p).rglob("*.py"))


def _starts_processes(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [f"{path.name}:{node.lineno}: import {a.name}" for a in node.names if a.name in STARTERS]
        elif isinstance(node, ast.ImportFrom) and node.module in STARTERS:
            found.append(f"{path.name}:{node.lineno}: from {node.module} import …")
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [
                f"{path.name}:{node.lineno}: from os import {a.name}" for a in node.names if a.name in OS_STARTERS
            ]
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
            and node.attr in OS_STARTERS
        ):
            found.append(f"{path.name}:{node.lineno}: os.{node.attr}")
    return found


def test_only_proc_starts_processes():
    files = _product_files()
    assert OWNER in files
    assert _starts_processes(OWNER), "the scan must see proc.py's own subprocess import"
    bypasses = {str(f.relative_to(ROOT)): hits for f in files if f != OWNER and (hits := _starts_processes(f))}
    assert not bypasses, f"start children through ibqos.proc (run_command, start_daemon): {bypasses}"


def _tree(tmp_path: Path, env: dict[str, str] | None = None):
    """A daemon whose shell starts a grandchild and waits: a SIGTERM to the shell alone would
    leave the grandchild running (the shell outlives it: a second sleep)."""
    pidfile = tmp_path / "grandchild.pid"
    d = start_daemon(
        "tree",
        ["sh", "-c", f"sleep 300 & echo $! > {pidfile}; wait; sleep 300"],
        log_path=tmp_path / "tree.log",
        env=env,
    )
    wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), timeout=10, what="the grandchild's pid")
    return d, int(pidfile.read_text())


def test_stop_group_stops_the_daemon_and_its_children(tmp_path):
    d, grandchild = _tree(tmp_path)
    try:
        assert pid_alive(grandchild)
        stop_group(d.pid, lambda: d.popen.poll() is None, grace=5)
        wait_until(lambda: not pid_alive(grandchild), timeout=5, what=f"grandchild {grandchild} to exit")
        assert d.popen.poll() is not None
    finally:
        d.stop()


def test_stop_group_signals_only_the_pid_of_a_process_that_leads_no_group(tmp_path):
    """A PID that is not a session leader (not started by ibqos.proc) is signalled alone: its
    group may be someone else's, here this test's own."""
    d, grandchild = _tree(tmp_path)
    try:
        assert os.getpgid(grandchild) == d.pid != grandchild
        stop_group(grandchild, lambda: pid_alive(grandchild), grace=5)
        assert not pid_alive(grandchild)
        assert d.alive()
    finally:
        d.stop()


@pytest.mark.parametrize("start", ["run_command", "start_daemon"])
def test_a_signal_while_a_child_is_spawned_leaves_no_child(tmp_path, monkeypatch, start):
    """SIGTERM delivered after the fork, before Popen returns (a dry run stopped as it started the
    read-back left `ibqos-readback` running): the child is killed and the signal raised."""
    children: list[int] = []
    real_popen = subprocess.Popen

    def popen_then_signal(*args, **kwargs):
        p = real_popen(*args, **kwargs)
        children.append(p.pid)
        os.kill(os.getpid(), signal.SIGTERM)  # the handler runs before this call returns
        return p

    saved = {s: signal.getsignal(s) for s in interrupt.SIGNALS}
    monkeypatch.setattr(interrupt, "_received", [])
    monkeypatch.setattr(subprocess, "Popen", popen_then_signal)
    interrupt.install()
    try:
        with pytest.raises(interrupt.Interrupted):
            if start == "run_command":
                run_command(["sleep", "30"], timeout=60)
            else:
                start_daemon("sleeper", ["sleep", "30"], log_path=tmp_path / "sleep.log")
    finally:
        for s, h in saved.items():
            signal.signal(s, h)
    assert len(children) == 1
    wait_until(lambda: not pid_alive(children[0]), timeout=5, what=f"child {children[0]} to be gone")
