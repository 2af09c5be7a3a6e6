"""SIGTERM to `ibqos simulate --sweep` running points on worker processes: the workers are
stopped (not waited for), nothing is half-written, exit 143."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
from ibqos.proc import pid_alive, proc_stat, wait_until
from simfabrics import dragonfly_dla


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        st = proc_stat(int(d.name)) if d.name.isdigit() else None
        if st is not None and st[1] == pid and st[0] != "Z":
            out.append(int(d.name))
    return out


@pytest.mark.parametrize("later", [0.0, 1.5], ids=["workers-started", "points-running"])
def test_sweep_stopped_by_sigterm_leaves_no_worker_and_no_half_file(ibqos_cli, tmp_path, half_written, later):
    dragonfly_dla(vls=2).save(tmp_path / "fabric.json")
    cmd = [*ibqos_cli.argv, "simulate", str(tmp_path), "--sweep", "0.1:1.0:0.1", "--jobs", "2", "--plot"]
    with open(tmp_path / "out.txt", "w") as out:
        p = subprocess.Popen(
            [*cmd, "--warmup-us", "10", "--time-us", "20000"],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        wait_until(
            lambda: len(_children(p.pid)) >= 2 or p.poll() is not None, timeout=120, interval=0.01, what="workers"
        )
        time.sleep(later)  # not an assertion: a later moment to stop it at
        workers = _children(p.pid)
        assert p.poll() is None and workers, (tmp_path / "out.txt").read_text()
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    text = (tmp_path / "out.txt").read_text()
    assert rc == 143, text
    assert "ibqos: interrupted by SIGTERM" in text and "Traceback" not in text
    assert not any(pid_alive(w) for w in workers)
    assert half_written(tmp_path) == []
    assert not (tmp_path / "sim" / "uniform-sweep.json").exists()  # the sweep did not end: no result
