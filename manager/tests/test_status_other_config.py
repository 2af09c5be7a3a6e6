"""`status --live --opensm-conf FILE` when the OpenSM on this host was restarted on another file
(`-F OTHER`, a copy an admin edits): no running OpenSM reads FILE, yet this host's port is the
master SM. Before, status judged the fabric against FILE's applied plan and said `status: OK`
(the copy programs the same tables), while a QoS policy or partitions edited in the copy would
run unverified. Now finding `other-config`, exit 1, naming the OpenSM and its file."""

from __future__ import annotations

import json

import pytest
from apply_helpers import live_sm, make_plan_file, run_apply, run_status  # noqa: F401 (fixture)
from ibqos import paths
from ibqos.fabric.dla_record import own_record
from ibqos.proc import start_daemon, wait_until

pytestmark = pytest.mark.fabric


def test_status_says_when_this_hosts_master_sm_runs_on_another_configuration(ibqos_cli, live_sm, tmp_path):
    h, sm, _, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    assert run_apply(ibqos_cli, h, sm, path_b).returncode == 0
    r = run_status(ibqos_cli, h, sm, "--live", "--json")
    assert r.returncode == 0, r.stdout + r.stderr  # the OpenSM that reads it: no finding
    other = tmp_path / "other.conf"
    other.write_text(sm.conf.read_text())  # what ibqos applied, copied: the admin's to edit
    sm.stop()
    cwd = tmp_path / "osm"
    cwd.mkdir()
    env = dict(h.env, LD_LIBRARY_PATH=str(paths.plugin_dir()))
    argv = [paths.require_tool("opensm", "opensm"), "-F", str(other), "-f", str(cwd / "opensm.log")]
    osm = start_daemon("opensm", argv, log_path=cwd / "out", env=env, cwd=cwd)
    try:
        wait_until(lambda: (rec := own_record(sm.dumps, osm.pid)) is not None and rec.state == "up", timeout=120)
        r = run_status(ibqos_cli, h, sm, "--live", "--json")
        assert r.returncode == 1, r.stdout + r.stderr
        found = [f for f in json.loads(r.stdout)["findings"] if f["kind"] == "other-config"]
        assert len(found) == 1, r.stdout
        msg = found[0]["message"]
        assert msg.startswith(f"no running OpenSM reads {sm.conf}, yet the master SM is this host's port 0x"), msg
        assert f"pid {osm.pid} reads {other}" in msg, msg
        # named, it is judged as before: the OpenSM given must read the file (exit 2)
        r = run_status(ibqos_cli, h, sm, "--live", "--pid", str(osm.pid))
        assert r.returncode == 2 and f"OpenSM (pid {osm.pid}) reads {other}" in r.stderr, r.stdout + r.stderr
    finally:
        osm.stop()
