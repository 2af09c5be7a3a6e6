"""`ibqos fabric up / run-sm / down` through the real console script."""

from __future__ import annotations

import json
import os
import signal

import pytest
from ibqos.proc import pid_alive

pytestmark = pytest.mark.fabric


def test_up_run_sm_down(ibqos_cli, tmp_path):
    up = ibqos_cli("fabric", "up", "--topology", "df42", "--run-dir", "f", cwd=tmp_path)
    assert up.returncode == 0, up.stderr
    state = json.loads((tmp_path / "f" / "harness.json").read_text())
    try:
        assert pid_alive(state["ibsim_pid"])
        once = ibqos_cli("fabric", "run-sm", "--run-dir", "f", cwd=tmp_path)
        assert once.returncode == 0, once.stderr
        assert "tables configured by minhop" in once.stdout
        assert (tmp_path / "f" / "sm0" / "dumps" / "opensm-lfts.dump").exists()
        d = ibqos_cli("fabric", "run-sm", "--run-dir", "f", "--daemon", cwd=tmp_path)
        assert d.returncode == 0, d.stderr
        sm_pid = json.loads((tmp_path / "f" / "harness.json").read_text())["sm_pids"][0]
        assert pid_alive(sm_pid)
    finally:
        down = ibqos_cli("fabric", "down", "--run-dir", "f", cwd=tmp_path)
    assert down.returncode == 0, down.stderr
    assert not pid_alive(state["ibsim_pid"])
    assert not pid_alive(sm_pid)


def test_errors_are_one_line(ibqos_cli, tmp_path):
    for args in (
        ["fabric", "up", "nonexistent.net"],
        ["fabric", "run-sm", "--run-dir", "nowhere"],
        ["fabric", "up", "--topology", "df73"],
    ):
        r = ibqos_cli(*args, cwd=tmp_path)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("ibqos: error: "), r.stderr
        assert "Traceback" not in r.stderr


def test_missing_debian_package_is_one_line(ibqos_cli, tmp_path):
    empty = tmp_path / "empty-path"
    empty.mkdir()
    r = ibqos_cli(
        "fabric", "up", "--topology", "df42", "--run-dir", "f", cwd=tmp_path, timeout=60, env={"PATH": str(empty)}
    )
    assert r.returncode == 3, r.stderr
    assert r.stderr == "ibqos: error: 'ibsim' not found: install Debian package ibsim-utils (make deps)\n"


def test_a_fabric_whose_net_file_is_gone_still_comes_down(ibqos_cli, tmp_path):
    """redteam: `fabric down` read the net file `fabric up` was given (its size) before it
    stopped anything: with the file deleted (a net written to /tmp) it said 'no such file',
    exit 2, and left ibsim running."""
    from ibqos_sim.harness.topology import fat_tree

    net = fat_tree(leaves=2, spines=1, hosts=2).write_net(tmp_path / "gone.net")
    up = ibqos_cli("fabric", "up", net, "--run-dir", "f", cwd=tmp_path)
    assert up.returncode == 0, up.stderr
    pid = json.loads((tmp_path / "f" / "harness.json").read_text())["ibsim_pid"]
    try:
        net.unlink()
        down = ibqos_cli("fabric", "down", "--run-dir", "f", cwd=tmp_path)
        assert down.returncode == 0, down.stderr
        assert not pid_alive(pid)
    finally:
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(
    "doc, says",
    [
        ("{}", ":1: netfile: Field required"),
        ("[]", ":1: Input should be a valid dictionary"),
        ('{"netfile": 5, "sock": "s", "ibsim_pid": 1}', ":1: netfile: Input should be a valid string"),
        ('{"netfile": "n.net", "sock": "s", "ibsim_pid": "12"}', ":1: ibsim_pid: Input should be a valid integer"),
        ('{"netfile": "n.net", "sock": "s", "ibsim_pid": -1}', ":1: ibsim_pid: Input should be greater than 0"),
        ('{"netfile": "n.net", "sock": "s", "ibsim_pid": 7, "sm_pids": 5}', ":1: sm_pids: Input should be"),
        ('{"netfile": "n.net", "sock": "s", "ibsim_pid": 7, "ibsim": {"kind": "x"}}', ":1: ibsim.kind: 'x': expected"),
        ("NaN", ": not JSON: NaN is not a number JSON allows"),
    ],
)
def test_a_hand_edited_state_file_is_one_line(ibqos_cli, tmp_path, doc, says):
    """redteam: each was an internal error (KeyError, TypeError: exit 70) in `fabric down`,
    `fabric run-sm` and a second `fabric up`."""
    state = tmp_path / "f" / "harness.json"
    state.parent.mkdir()
    state.write_text(doc)
    for args in (["down"], ["run-sm"], ["up", "--topology", "df42"]):
        r = ibqos_cli("fabric", *args, "--run-dir", "f", cwd=tmp_path, timeout=60)
        assert r.returncode == 2 and r.stderr.startswith(f"ibqos: error: {state}{says}"), (args, r.stderr)
        assert r.stderr.count("\n") == 1, r.stderr


def test_a_cut_state_file_still_brings_down_what_is_provably_the_fabrics(ibqos_cli, tmp_path):
    """harness.json cut short (a full disk, a hand's editor): `fabric down` said the one line
    and stopped nothing, leaving ibsim and the daemon OpenSM for a hand to find and kill. Now
    it stops those two, found by what the harness gave them (ibsim running in the run
    directory, OpenSM below it with OSM_CACHE_DIR there, both on a socket of ours), and says so
    in the same one line, exit 2. What merely carries the socket, as an admin's shell given the
    'clients:' line does, or an ibsim elsewhere, is left alone."""
    import shutil
    import subprocess

    from ibqos_sim.harness.topology import fat_tree

    net = fat_tree(leaves=2, spines=1, hosts=2).write_net(tmp_path / "ft.net")
    run, decoys = tmp_path / "f", []
    assert ibqos_cli("fabric", "up", net, "--run-dir", "f", cwd=tmp_path).returncode == 0
    state_path = run / "harness.json"
    state = json.loads(state_path.read_text())
    pids = [state["ibsim_pid"]]
    try:
        d = ibqos_cli("fabric", "run-sm", "--run-dir", "f", "--daemon", cwd=tmp_path)
        assert d.returncode == 0, d.stderr
        sm_pid = json.loads(state_path.read_text())["sm_pids"][0]
        pids.append(sm_pid)
        fake_ibsim = tmp_path / "elsewhere" / "ibsim"
        fake_ibsim.parent.mkdir()
        shutil.copy("/bin/sleep", fake_ibsim)
        env = dict(os.environ, IBSIM_SOCKNAME=state["sock"], OSM_CACHE_DIR=str(run))
        for argv, cwd in (([str(fake_ibsim), "600"], fake_ibsim.parent), (["sleep", "600"], run)):
            decoys.append(subprocess.Popen(argv, cwd=cwd, env=env))
        text = state_path.read_text()
        state_path.write_text(text[: len(text) // 2])
        down = ibqos_cli("fabric", "down", "--run-dir", "f", cwd=tmp_path)
        assert down.returncode == 2, down.stdout + down.stderr
        assert down.stderr.count("\n") == 1 and down.stderr.startswith(f"ibqos: error: {state_path}"), down.stderr
        assert (
            f"cannot tell from it which processes 'fabric up' started: stopped OpenSM pid {sm_pid}, "
            f"ibsim pid {state['ibsim_pid']}, found in this run directory" in down.stderr
        ), down.stderr
        assert not pid_alive(state["ibsim_pid"]) and not pid_alive(sm_pid)
        assert all(p.poll() is None for p in decoys)
    finally:
        for p in decoys:
            p.kill()
            p.wait()
        for pid in pids:
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
