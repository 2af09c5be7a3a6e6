"""A standby SM gets the master's version without a sweep: `ibqos apply PLAN --standby` on its
host validates the plan's files and swaps them into its ibqos.d/ as one version, sends no
signal and reads nothing back; the plan hash (meta.json, `ibqos status --opensm-conf`) and the
files are the master's."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from apply_helpers import (  # noqa: F401 (fixture)
    APPLY_FAULT,
    child_env,
    live_sm,
    make_plan_file,
    managed_texts,
    programmed_equals,
    run_apply,
    sm_on_plan_a,
    state_tree,
    switch_link,
)
from ibqos import osmconf
from ibqos.fabric.live import read_live
from ibqos.proc import run_command
from ibqos.render import render_plan

pytestmark = pytest.mark.fabric


def _current(conf: Path) -> Path:
    return (conf.parent / "ibqos.d" / "current").resolve()


def test_standby_gets_the_masters_version_by_hash_without_a_sweep(ibqos_cli, live_sm, tmp_path):
    h, sm, plan_a, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 25)
    # the standby host's configuration: the same plan A, its own paths, no OpenSM to signal
    standby = render_plan(plan_a, tmp_path / "standby")["opensm.conf"]
    master = run_apply(ibqos_cli, h, sm, path_b)
    assert master.returncode == 0, master.stdout + master.stderr
    sweeps = sm.record().heavy_sweeps

    r = ibqos_cli("apply", path_b, "--opensm-conf", standby, "--standby", env=child_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert "for the standby SM" in r.stdout and "not swept" in r.stdout
    assert sm.record().heavy_sweeps == sweeps  # nothing was signalled

    m, s = _current(sm.conf), _current(standby)
    meta_m, meta_s = (json.loads((d / "meta.json").read_text()) for d in (m, s))
    assert meta_m["plan_sha256"] == meta_s["plan_sha256"]
    for name in ("plan.json", "qos-policy.conf", "plugin-tables.conf"):
        assert (m / name).read_bytes() == (s / name).read_bytes(), name
    qos = {k: v for k, v in osmconf.parse((m / "opensm.conf").read_text()).items() if k.startswith("qos_")}
    ours = osmconf.parse((s / "opensm.conf").read_text())
    assert {k: ours.get(k) for k in qos} == {k: v for k, v in qos.items() if k != "qos_policy_file"} | {
        "qos_policy_file": str(tmp_path / "standby" / "qos-policy.conf")
    }
    # the paths the standby's OpenSM reads now hold that version
    assert Path(ours["qos_policy_file"]).read_bytes() == (m / "qos-policy.conf").read_bytes()

    said = [ibqos_cli("status", "--opensm-conf", c, env=child_env()).stdout for c in (sm.conf, standby)]
    assert f"(plan sha256 {meta_m['plan_sha256']})" in said[0]
    assert f"(plan sha256 {meta_m['plan_sha256']})" in said[1] and "standby" in said[1]


def test_standby_on_the_masters_host_is_refused(ibqos_cli, tmp_path):
    """redsm: OpenSM 3.3.23 re-reads opensm.conf, the QoS policy and the plugin's table file at
    every heavy sweep, not only at a SIGHUP. `apply --standby` run on the master's host (the
    unit's OpenSM, or the one that reads the file) staged plan B, exit 0, 'not swept'; the next
    link that went down and up programmed plan B on the fabric, unverified and with no
    rollback. Now one line naming the master, exit 3, nothing written; after the same link
    flap the fabric still runs plan A."""
    with sm_on_plan_a(tmp_path, console=True) as (h, sm, plan_a, _):
        _, path_b = make_plan_file(tmp_path, "b", 60)
        before = managed_texts(sm)
        for target in ((), ("--pid", str(sm.pid))):
            r = ibqos_cli(
                "apply", path_b, "--opensm-conf", sm.conf, "--standby", "--sim-socket", h.sock, *target, env=child_env()
            )
            assert r.returncode == 3, r.stdout + r.stderr
            assert r.stderr.startswith("ibqos: error: master SM: 0x") and f"this OpenSM (pid {sm.pid})" in r.stderr
            assert "apply without --standby here" in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
        assert managed_texts(sm) == before and not (sm.conf.parent / "ibqos.d" / "v0000").exists()
        desc, port = switch_link(read_live(h.env))
        h.unlink(desc, port, sm=sm)
        h.relink(desc, port, sm=sm)  # heavy sweeps, each re-reading the files
        assert programmed_equals(h, plan_a)


def test_standby_holds_its_version_to_the_masters_rules_no_change_and_no_build_on_a_hand_edit(ibqos_cli, tmp_path):
    """--standby skipped two rules of apply: a plan the standby already holds staged a new,
    identical version at every run (v0001, v0002, ...), and a managed file replaced by hand
    (DRIFT: 'sed -i' made the link a file) was stored and staged over, exit 0, so the standby
    would take over without the edit it runs on, unsaid. Now 'no change', nothing written;
    DRIFT refused as apply refuses it, exit 1, one line, nothing written; --accept-edits
    builds on it. No OpenSM reads this configuration (a stopped standby)."""
    plan_a, path_a = make_plan_file(tmp_path, "a", 40)
    conf = render_plan(plan_a, tmp_path / "standby")["opensm.conf"]
    state = conf.parent / "ibqos.d"

    def standby(*extra: str):
        return ibqos_cli("apply", path_a, "--opensm-conf", conf, "--standby", *extra, env=child_env())

    r = standby()
    assert r.returncode == 0 and "as v0001 for the standby SM" in r.stdout, r.stdout + r.stderr
    before = state_tree(state)
    r = standby()
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == [f"no change: {conf} and its files already hold this plan; nothing written"]
    assert state_tree(state) == before

    policy = conf.parent / "qos-policy.conf"
    edited = policy.read_text() + "# the admin's edit\n"
    policy.unlink()
    policy.write_text(edited)  # as 'sed -i' leaves it: a file of its own in place of the link
    r = standby()
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1, r.stdout + r.stderr
    assert len(lines) == 1 and lines[0].startswith(f"ibqos: error: DRIFT: {policy} no longer reads v0001"), r.stderr
    assert lines[0].endswith(
        "; --accept-edits builds on it (what the plan does not set is kept), "
        "'ibqos rollback VERSION' returns to a stored version"
    ), r.stderr
    assert state_tree(state) == before and not policy.is_symlink() and policy.read_text() == edited

    r = standby("--accept-edits")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "as v0003 for the standby SM" in r.stdout  # v0002: the edit, kept
    assert (state / "v0002" / "qos-policy.conf").read_text() == edited


def test_a_bug_before_the_swap_on_a_standby_leaves_no_staged_version(tmp_path):
    """`apply --standby` and a bug (a KeyError) after the version was staged (journal 'intent'),
    before its swap: before, v0001 stayed in the standby's ibqos.d/ at 'intent' for its next
    apply or status to drop; now it goes at once (journal 'discarded'), one line, exit 70."""
    plan_a, _ = make_plan_file(tmp_path, "a", 40)
    _, path_b = make_plan_file(tmp_path, "b", 25)
    standby = render_plan(plan_a, tmp_path / "standby")["opensm.conf"]
    cmd = [sys.executable, str(APPLY_FAULT), "raise@journal:intent", "apply", str(path_b)]
    r = run_command([*cmd, "--opensm-conf", str(standby), "--standby"], env=child_env(), timeout=300, check=False)
    assert r.returncode == 70, r.stdout + r.stderr
    state = standby.parent / "ibqos.d"
    assert sorted(p.name for p in state.iterdir() if p.name.startswith(("v", ".v"))) == ["v0000"]
    assert json.loads((state / "journal.json").read_text())["state"] == "discarded"
    assert r.stderr.splitlines() == [
        "ibqos: internal error: KeyError: 'injected at journal:intent' (this is a bug in ibqos; 'ibqos -v ...' "
        "shows where); stopped before the swap, nothing changed"
    ]
    assert os.readlink(state / "current") == "v0000"
