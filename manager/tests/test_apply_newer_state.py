"""ibqos.d's journal and history written by a newer ibqos (schema `ibqos.journal/2`, after a
downgrade or beside a second installation): `apply`, `status --opensm-conf`, `history` and
`rollback` each say so in one line naming the file (and the history's line) and its schema,
exit 2, and change nothing: no file in ibqos.d/, no managed file, no sweep."""

from __future__ import annotations

import json

import pytest
from apply_helpers import (
    child_env,
    live_sm,  # noqa: F401 (fixture)
    make_plan_file,
    managed_texts,
    run_apply,
    run_rollback,
    run_status,
    state_tree,
)

pytestmark = pytest.mark.fabric

NEWER = "ibqos.journal/2"


def _refused(cp, where: str) -> None:
    lines = cp.stderr.strip().splitlines()
    assert cp.returncode == 2, cp.stdout + cp.stderr
    assert len(lines) == 1 and lines[0].startswith(f"ibqos: error: {where}: "), cp.stderr
    assert f"schema '{NEWER}': written by a newer ibqos" in lines[0] and "nothing changed" in lines[0]


def test_a_journal_and_a_history_from_a_newer_ibqos_are_named_and_nothing_changes(ibqos_cli, live_sm, tmp_path):
    h, sm, _, path_a = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    assert run_apply(ibqos_cli, h, sm, path_b).returncode == 0
    state = sm.conf.parent / "ibqos.d"
    journal, hist = state / "journal.json", state / "history.jsonl"
    ours = json.loads(journal.read_text())
    # version 1, which the journal leaves unsaid (an ibqos from before the field reads no other:
    # test_apply_upgrade); the history names it
    assert "schema" not in ours
    assert all(json.loads(line)["schema"] == "ibqos.journal/1" for line in hist.read_text().splitlines())
    # the newer ibqos's last apply: a state and a field this one does not know
    journal.write_text(json.dumps(dict(ours, schema=NEWER, state="canary", canary_of="v0001")))
    before, texts, sweeps = state_tree(state), managed_texts(sm), sm.record().heavy_sweeps

    _refused(run_apply(ibqos_cli, h, sm, path_a), str(journal))
    _refused(run_status(ibqos_cli, h, sm), str(journal))
    _refused(run_rollback(ibqos_cli, h, sm, "v0000"), str(journal))
    assert state_tree(state) == before and managed_texts(sm) == texts

    # its history line, after ours: the journal is ours again
    journal.write_text(json.dumps(ours))
    n = len(hist.read_text().splitlines()) + 1
    with hist.open("a") as f:
        f.write(json.dumps(dict(ours, schema=NEWER, state="canary")) + "\n")
    before = state_tree(state)
    _refused(ibqos_cli("history", "--opensm-conf", sm.conf, env=child_env()), f"{hist}:{n}")
    _refused(run_apply(ibqos_cli, h, sm, path_a), f"{hist}:{n}")
    _refused(run_rollback(ibqos_cli, h, sm), f"{hist}:{n}")
    assert state_tree(state) == before and managed_texts(sm) == texts
    assert sm.record().heavy_sweeps == sweeps  # no SIGHUP either
