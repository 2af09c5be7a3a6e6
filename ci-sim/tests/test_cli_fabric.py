"""`ibqos fabric up / run-sm / down` through the real console script."""

from __future__ import annotations

import json

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
