"""`status --live --opensm-conf FILE` and `monitor --opensm-conf FILE` when the OpenSM on this
host was restarted on another file (`-F OTHER`, a copy an admin edits): no running OpenSM reads
FILE, yet this host's port is the master SM. Before, status judged the fabric against FILE's
applied plan and said `status: OK` (the copy programs the same tables), while a QoS policy or
partitions edited in the copy would run unverified. Now finding `other-config`, exit 1, naming
the OpenSM and its file. The monitor said nothing of it (exit 0) until the finding moved into
ibqos.health, where both raise it: the same line, and `ibqos_opensm_other_config` 1."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from apply_helpers import (  # noqa: F401 (fixture)
    live_sm_patched,
    make_plan_file,
    monitor_once,
    patched_ibsim,
    run_apply,
    run_status,
    sm_on_plan_a,
)
from ibqos import paths
from ibqos.fabric.dla_record import own_record
from ibqos.fabric.live import read_live
from ibqos.proc import start_daemon, wait_until

pytestmark = pytest.mark.fabric


def _monitor(ibqos_cli, h, sm, plan: Path, prom: Path) -> tuple[int, list[str], dict[tuple, float]]:
    """One interval: exit code, the other-config findings, the gauge's samples."""
    return monitor_once(ibqos_cli, h, sm, plan, prom, "other-config", "ibqos_opensm_other_config")


def _without_process_list(line: str) -> str:
    return re.sub(r"\(pid \d+ reads .*\); restart", "(...); restart", line)


def test_status_and_monitor_say_when_this_hosts_master_sm_runs_on_another_configuration(
    ibqos_cli, live_sm_patched, tmp_path
):
    h, sm, _, _ = live_sm_patched
    _, path_b = make_plan_file(tmp_path, "b", 60)
    assert run_apply(ibqos_cli, h, sm, path_b).returncode == 0
    r = run_status(ibqos_cli, h, sm, "--live", "--json")
    assert r.returncode == 0, r.stdout + r.stderr  # the OpenSM that reads it: no finding
    prom = tmp_path / "ibqos.prom"
    assert _monitor(ibqos_cli, h, sm, path_b, prom) == (0, [], {(): 0.0})
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
        found = [f["message"] for f in json.loads(r.stdout)["findings"] if f["kind"] == "other-config"]
        assert len(found) == 1, r.stdout
        msg = found[0]
        assert msg.startswith(f"no running OpenSM reads {sm.conf}, yet the master SM is this host's port 0x"), msg
        assert f"pid {osm.pid} reads {other}" in msg, msg
        # the monitor on the same file: the same line, and the gauge. The line lists every OpenSM
        # running on the host, and the other tests' OpenSMs come and go between the two reads
        rc, said, gauge = _monitor(ibqos_cli, h, sm, path_b, prom)
        assert (rc, len(said), gauge) == (1, 1, {(): 1.0}), said
        assert _without_process_list(said[0]) == _without_process_list(msg), said[0]
        assert f"pid {osm.pid} reads {other}" in said[0], said[0]
        # named, it is judged as before: the OpenSM given must read the file (exit 2)
        r = run_status(ibqos_cli, h, sm, "--live", "--pid", str(osm.pid))
        assert r.returncode == 2 and f"OpenSM (pid {osm.pid}) reads {other}" in r.stderr, r.stdout + r.stderr
    finally:
        osm.stop()


def test_other_config_names_the_opensm_on_the_master_port_not_those_told_another(ibqos_cli, tmp_path):
    """A multi-port host runs one OpenSM per port (Debian's opensm@GUID: `opensm -g GUID`). Here
    the master port's OpenSM reads another file (`-g A -p 15 -F other.conf`) and a second one
    is told port B (`-g B -F b.conf`, on node B: what /proc shows of a second port's unit).
    Before, the finding listed every OpenSM running on the host, the one on port B too; now
    it names those told the master's port (or none, which bind the first port up)."""
    with sm_on_plan_a(tmp_path, **patched_ibsim()) as (h, sm, _, _):
        guids = {n.desc: n.ports[1].guid for n in read_live(h.env).nodes.values() if n.kind == "ca"}
        other, b_conf = tmp_path / "other.conf", tmp_path / "b.conf"
        other.write_text(sm.conf.read_text())
        b_conf.write_text(sm.conf.read_text())
        sm.stop()
        env = dict(h.env, LD_LIBRARY_PATH=str(paths.plugin_dir()))
        started = []
        try:
            for name, guid, conf, extra in (
                ("a", guids["ca-g0-s0-h0"], other, ["-p", "15"]),  # stays master when B starts
                ("b", guids["ca-g1-s0-h0"], b_conf, []),
            ):
                cwd = tmp_path / name
                cwd.mkdir()
                argv = [paths.require_tool("opensm", "opensm"), "-g", f"0x{guid:016x}", *extra]
                argv += ["-F", str(conf), "-f", str(cwd / "opensm.log")]
                on = dict(env, SIM_HOST="ca-g1-s0-h0") if name == "b" else env
                started.append(start_daemon(f"opensm-{name}", argv, log_path=cwd / "out", env=on, cwd=cwd))
                if name == "a":
                    wait_until(
                        lambda: (rec := own_record(sm.dumps, started[0].pid)) is not None and rec.state == "up",
                        timeout=120,
                    )
            r = run_status(ibqos_cli, h, sm, "--live", "--json")
            alive = [o.alive() for o in started]
        finally:
            for osm in started:
                osm.stop()
    assert alive == [True, True]
    assert r.returncode == 1, r.stdout + r.stderr
    found = [f["message"] for f in json.loads(r.stdout)["findings"] if f["kind"] == "other-config"]
    assert len(found) == 1, r.stdout
    assert f"pid {started[0].pid} reads {other}" in found[0], found[0]
    assert f"pid {started[1].pid} " not in found[0], found[0]
