"""ibqos.d's own files after a crash or a full disk: a history line cut short (the process
killed inside append(), or ENOSPC) stays one skipped line; the applies after it append whole
lines, and `ibqos history` and `ibqos rollback` go on reading the file."""

from __future__ import annotations

import json

import pytest
from apply_helpers import (
    live_sm,  # noqa: F401 (fixture)
    make_plan_file,
    programmed_equals,
    run_apply,
    run_rollback,
)

pytestmark = pytest.mark.fabric


def test_a_history_line_cut_by_a_crash_does_not_poison_the_lines_after_it(ibqos_cli, live_sm, tmp_path):
    h, sm, plan_a, path_a = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    assert run_apply(ibqos_cli, h, sm, path_b).returncode == 0
    hist = sm.conf.parent / "ibqos.d" / "history.jsonl"
    whole = hist.read_bytes()
    hist.write_bytes(whole + whole.splitlines()[-1][:25])  # an append cut after 25 bytes

    assert run_apply(ibqos_cli, h, sm, path_a).returncode == 0
    assert run_apply(ibqos_cli, h, sm, path_b).returncode == 0
    cp = ibqos_cli("history", "--opensm-conf", sm.conf, "--json")
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert [r["result"] for r in json.loads(cp.stdout)] == ["original", "verified", "verified", "verified"]
    cp = run_rollback(ibqos_cli, h, sm)  # its default target comes from the history
    assert cp.returncode == 0 and "rollback to v0002" in cp.stdout, cp.stdout + cp.stderr
    assert programmed_equals(h, plan_a)
    assert len(hist.read_text().splitlines()) == len(whole.splitlines()) + 4  # the cut line, ended, + 3
