"""A managed file edited behind ibqos's back without going through its link: `sed -i` (and
editors that write a new file and rename it) replaces the symlink into ibqos.d/current with a
file of its own, which no manifest covers. OpenSM reads that edit at its next heavy sweep, so
`status --opensm-conf` and `history` name it (exit 1), `apply` refuses to build on it without
--accept-edits, and with it stores the edit as a version before applying over it."""

from __future__ import annotations

import subprocess

import pytest
from apply_helpers import (
    live_sm,  # noqa: F401 (fixture)
    make_plan_file,
    programmed_equals,
    run_apply,
    run_status,
)
from ibqos import osmconf

pytestmark = pytest.mark.fabric


def test_a_link_replaced_by_sed_is_found_refused_and_kept_with_accept_edits(ibqos_cli, live_sm, tmp_path):
    h, sm, plan_a, path_a = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    assert run_apply(ibqos_cli, h, sm, path_b).returncode == 0
    assert run_status(ibqos_cli, h, sm).returncode == 0

    subprocess.run(["sed", "-i", "s/^sweep_interval .*/sweep_interval 17/", str(sm.conf)], check=True)
    assert not sm.conf.is_symlink()  # what sed -i does to a symlink
    edited = sm.conf.read_bytes()

    for cp in (
        run_status(ibqos_cli, h, sm),
        run_status(ibqos_cli, h, sm, "--live"),
        ibqos_cli("history", "--opensm-conf", sm.conf),
    ):
        assert cp.returncode == 1, cp.stdout + cp.stderr
        assert f"DRIFT: {sm.conf} no longer reads v0001" in cp.stdout + cp.stderr

    cp = run_apply(ibqos_cli, h, sm, path_a)
    assert cp.returncode == 1 and "--accept-edits" in cp.stderr, cp.stdout + cp.stderr
    assert sm.conf.read_bytes() == edited and not sm.conf.is_symlink()  # refused: nothing touched

    cp = run_apply(ibqos_cli, h, sm, path_a, "--accept-edits")
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert programmed_equals(h, plan_a)
    assert sm.conf.is_symlink() and osmconf.parse(sm.conf.read_text())["sweep_interval"] == "17"
    stored = sm.conf.parent / "ibqos.d" / "v0002" / "opensm.conf"
    assert stored.read_bytes() == edited  # the hand edit, kept as a version of its own
    assert run_status(ibqos_cli, h, sm).returncode == 0
