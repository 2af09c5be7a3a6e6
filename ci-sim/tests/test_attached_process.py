"""A daemon a previous `ibqos fabric up` left running is stopped with its whole process group
(harness.AttachedProcess, through ibqos.proc.stop_group), never by signalling one PID."""

from __future__ import annotations

import os

from ibqos.proc import pid_alive, start_daemon, wait_until
from ibqos_sim.harness import AttachedProcess, sock_prefix_for


def test_attached_process_stop_kills_its_process_group(tmp_path):
    sock = f"{sock_prefix_for(os.getpid())}attached"
    pidfile = tmp_path / "grandchild.pid"
    d = start_daemon(
        "attached",
        ["sh", "-c", f"sleep 300 & echo $! > {pidfile}; wait"],
        log_path=tmp_path / "attached.log",
        env=dict(os.environ, IBSIM_SOCKNAME=sock),
    )
    try:
        wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), timeout=10, what="the grandchild")
        grandchild = int(pidfile.read_text())
        attached = AttachedProcess(d.pid, sock, tmp_path / "attached.log")
        assert attached.alive()
        attached.stop()
        wait_until(lambda: not pid_alive(grandchild), timeout=5, what=f"grandchild {grandchild} to exit")
        assert not attached.alive()
    finally:
        d.stop()
