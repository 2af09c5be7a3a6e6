"""scripts/cli_docs.py, which `make install` and `make deb` run: one man page per command and
subcommand, from the CLI's own help, dated by SOURCE_DATE_EPOCH (a package build is
reproducible), and click's bash completion script for `ibqos`."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_man_pages_and_completion_from_the_cli(tmp_path):
    env = dict(os.environ, SOURCE_DATE_EPOCH="86400")
    cp = subprocess.run(
        [sys.executable, ROOT / "scripts/cli_docs.py", tmp_path], env=env, capture_output=True, text=True, timeout=120
    )
    assert cp.returncode == 0, cp.stderr
    pages = {p.name for p in (tmp_path / "man1").iterdir()}
    commands = {ep.name for ep in importlib.metadata.entry_points(group="ibqos.commands")}
    assert {"ibqos.1"} | {f"ibqos-{c}.1" for c in commands} <= pages
    assert {"ibqos-fabric-up.1", "ibqos-testbed-run.1"} <= pages  # subcommands of the groups too

    plan = (tmp_path / "man1/ibqos-plan.1").read_text()
    assert plan.startswith('.TH "IBQOS PLAN" "1" "1970-01-02"'), plan[:80]
    assert "Plan file to write (JSON)." in plan and r"\-\-output" in plan
    top = (tmp_path / "man1/ibqos.1").read_text()
    assert all(f"\\fB{c}\\fP" in top for c in commands), top  # ibqos(1) lists every command

    completion = (tmp_path / "bash-completion/ibqos").read_text()
    assert "_IBQOS_COMPLETE=bash_complete" in completion
    assert "complete -o nosort -F _ibqos_completion ibqos" in completion
