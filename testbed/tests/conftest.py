"""Fixtures of the testbed tests: a plan, and the perftest replayer on PATH."""

from __future__ import annotations

import json
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from testbed_helpers import FIXTURES, REPLAYER


@pytest.fixture
def plan_file() -> Path:
    """Seed 002 configuration A as a plan document (PLAN_DOC fields only)."""
    return FIXTURES / "plan_configA.json"


@pytest.fixture
def make_plan(tmp_path):
    """Configuration A changed by `edit(doc)`, written as plan.json (or another name)."""

    def make(edit=lambda doc: None, name: str = "plan.json") -> Path:
        doc = json.loads((FIXTURES / "plan_configA.json").read_text())
        edit(doc)
        p = tmp_path / name
        p.write_text(json.dumps(doc, indent=2))
        return p

    return make


@dataclass
class Replay:
    bin_dir: Path
    log: Path
    env: dict

    def events(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(ln) for ln in self.log.read_text().splitlines()]


@pytest.fixture
def replay(tmp_path, monkeypatch):
    """ib_send_bw/ib_send_lat on PATH replaying fixtures/<set>/ (configuration A by default)."""

    def make(fixture_set: str = "replay_configA", tools=("ib_send_bw", "ib_send_lat"), hang: str = "") -> Replay:
        bin_dir = tmp_path / f"bin-{fixture_set}"
        bin_dir.mkdir(exist_ok=True)
        for tool in tools:
            w = bin_dir / tool
            w.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{REPLAYER}" {tool} "$@"\n')
            w.chmod(w.stat().st_mode | stat.S_IXUSR)
        log = tmp_path / f"events-{fixture_set}.jsonl"
        path = str(bin_dir) + os.pathsep + os.environ["PATH"] if len(tools) == 2 else str(bin_dir)
        env = {
            "PATH": path,
            "IBQOS_REPLAY_DIR": str(FIXTURES / fixture_set),
            "IBQOS_REPLAY_LOG": str(log),
            "IBQOS_REPLAY_HANG": hang,
        }
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        return Replay(bin_dir, log, {**os.environ, **env})

    return make
