"""`ibqos analyze --engine algorithm1 --runs N`: bounded, and long runs show progress (issue 13)."""

from __future__ import annotations

import json
import os

TABLES = ["--high", "0:9,1:10,0:8,2:7", "--low", "3:6", "--engine", "algorithm1"]


def test_runs_beyond_the_bound_is_one_clear_error(ibqos_cli):
    r = ibqos_cli("analyze", *TABLES, "--runs", "100000")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [
        "ibqos: error: --runs: 100000 is outside 1..10000: Algorithm 1 "
        "keeps every delivery, so its time and memory grow with the runs"
    ]
    assert ibqos_cli("analyze", *TABLES, "--runs", "0").returncode == 2


def test_long_runs_show_a_progress_bar_on_stderr_and_keep_stdout_clean(ibqos_cli):
    env = dict(os.environ, FORCE_COLOR="1", COLUMNS="100")  # as on a terminal
    r = ibqos_cli("analyze", *TABLES, "--runs", "2000", "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert "Algorithm 1 cycles" in r.stderr and "2000/2000" in r.stderr
    doc = json.loads(r.stdout)
    assert doc["engine"] == "algorithm1"
    short = ibqos_cli("analyze", *TABLES, "--runs", "30", "--json", env=env)
    assert short.returncode == 0 and short.stderr == ""
