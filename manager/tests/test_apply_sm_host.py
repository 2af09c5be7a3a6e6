"""What apply signals and reads is what the running OpenSM reads, on an SM host run the
Debian way: OpenSM's command line (`-f/--log_file`, `-F`) beats opensm.conf, and Debian runs
one OpenSM per port with one shared /etc/opensm/opensm.conf.

- the log: an OpenSM started as the init script starts it (`-g PORT -f /var/log/opensm.PORT.log`)
  while opensm.conf's `log_file` names another file logs to the command line's; the sweep's
  ERR lines are read there (before: from the file's, so a sweep error went unseen and the
  apply was "verified");
- log rotation (Debian's /etc/logrotate.d/opensm: rename, SIGUSR1, compress) between the
  sweep's ERR and apply reading the log: the rest of the old file is read from the file apply
  holds open (before: the new, empty log was read, the error went unseen, the plan "verified");
- the config: `--opensm-conf` that the OpenSM does not read is refused (exit 2), and so is a
  configuration a second running OpenSM reads too (two ports, two subnets, one file: exit 3),
  each in one line and before anything changes."""

from __future__ import annotations

import os
import signal

import pytest
from apply_helpers import (
    child_env,
    make_plan_file,
    managed_texts,
    programmed_equals,
    run_apply,
    sm_on_plan_a,
    state_tree,
)
from ibqos import paths
from ibqos.fabric.dla_record import own_record
from ibqos.osmconf import parse
from ibqos.paths import REPO_ROOT
from ibqos.plan import load_plan
from ibqos.proc import pid_alive, run_command, start_daemon, wait_until
from ibqos.render import render_plan
from ibqos_sim.harness import Harness
from ibqos_sim.harness.topology import dragonfly, fat_tree
from test_apply_sweep_errors import _plan

pytestmark = pytest.mark.fabric


def test_sweep_errors_are_read_from_the_command_lines_log_not_the_files(ibqos_cli, tmp_path):
    elsewhere = tmp_path / "conf-says.log"  # the admin's log_file; OpenSM runs with -f
    part = tmp_path / "partitions.conf"
    part.write_text("Default=0x7fff : ALL=full ;\n")
    with sm_on_plan_a(tmp_path, conf={"partition_config_file": str(part), "log_file": str(elsewhere)}) as (
        h,
        sm,
        plan_a,
        _,
    ):
        assert parse(sm.conf.read_text())["log_file"] == str(elsewhere) and not elsewhere.exists()
        _, path_bad = _plan(tmp_path, "bad", pkey="0x0a01")  # no partition for it: ERR AC14
        texts = managed_texts(sm)
        r = ibqos_cli("apply", path_bad, "--opensm-conf", sm.conf, "--pid", sm.pid, "--sim-socket", h.sock)
        assert r.returncode == 1, r.stdout + r.stderr
        assert f"OpenSM logged 1 error(s) in the sweep ({sm.log})" in r.stderr and "ERR AC14" in r.stderr, r.stderr
        assert "rolled back" in r.stderr
        assert managed_texts(sm) == texts and programmed_equals(h, plan_a)


def test_a_log_rotated_during_the_sweep_still_shows_its_errors(ibqos_cli, tmp_path):
    part = tmp_path / "partitions.conf"
    part.write_text("Default=0x7fff : ALL=full ;\n")
    with sm_on_plan_a(tmp_path, conf={"partition_config_file": str(part)}) as (h, sm, plan_a, _):
        _, path_bad = _plan(tmp_path, "bad", pkey="0x0a01")  # ERR AC14 in the sweep
        r = run_apply(ibqos_cli, h, sm, path_bad, fault="logrotate@journal:swept")
        assert r.returncode == 1, r.stdout + r.stderr
        assert f"OpenSM logged 1 error(s) in the sweep ({sm.log})" in r.stderr and "ERR AC14" in r.stderr, r.stderr
        assert "truncated" not in r.stdout + r.stderr  # nothing was lost
        assert sm.log.with_name(sm.log.name + ".1.gz").exists() and programmed_equals(h, plan_a)
        assert "ERR AC14" not in sm.log.read_text()  # the error is only in the rotated file


def test_a_conf_the_opensm_does_not_read_or_another_opensm_reads_too_is_refused(ibqos_cli, tmp_path):
    with sm_on_plan_a(tmp_path) as (h, sm, plan_a, _):
        _, path_b = make_plan_file(tmp_path, "b", 60)
        other_conf = tmp_path / "cfg-a" / "opensm.conf"  # a whole conf, but not the one OpenSM runs
        r = ibqos_cli("apply", path_b, "--opensm-conf", other_conf, "--pid", sm.pid, "--sim-socket", h.sock)
        assert r.returncode == 2, r.stdout + r.stderr
        assert r.stderr.strip().splitlines() == [
            f"ibqos: error: {other_conf}: --opensm-conf: OpenSM (pid {sm.pid}) reads {sm.conf} (its -F), "
            f"not this file: give --opensm-conf {sm.conf}"
        ]

        # a second subnet on this host (its own ibsim fabric), whose OpenSM reads the same file
        net2 = dragonfly(3, 1, 1).write_net(tmp_path / "fabric2.net")
        with Harness(net2, run_dir=tmp_path / "run2", ibsim="debian") as h2:
            env = dict(h2.env, LD_LIBRARY_PATH=str(paths.plugin_dir()))
            log2 = tmp_path / "run2" / "opensm.second.log"
            argv = [paths.require_tool("opensm", "opensm"), "-F", str(sm.conf), "-f", str(log2)]
            second = start_daemon("opensm", argv, log_path=tmp_path / "run2" / "opensm2.out", env=env, cwd=tmp_path)
            try:
                state = sm.conf.parent / "ibqos.d"
                before, texts = state_tree(state), managed_texts(sm)
                r = ibqos_cli(
                    "apply",
                    path_b,
                    *("--opensm-conf", sm.conf, "--pid", sm.pid, "--sim-socket", h.sock),
                    env=child_env(),
                )
                assert r.returncode == 3, r.stdout + r.stderr
                lines = r.stderr.strip().splitlines()
                assert len(lines) == 1 and lines[0].startswith(
                    f"ibqos: error: {sm.conf} is also read by OpenSM pid {second.pid} ({' '.join(argv)}): "
                ), r.stderr
                assert "give each its own opensm.conf" in lines[0]
                assert state_tree(state) == before and managed_texts(sm) == texts
                assert programmed_equals(h, plan_a) and second.alive() and os.path.exists(log2)
                # why: its plugin record went to the same dump_files_dir, over A's
                wait_until(lambda: own_record(sm.dumps, second.pid) is not None, timeout=60)
                assert own_record(sm.dumps, sm.pid) is None
            finally:
                second.stop()
        # alone again, until A's next heavy sweep the record there is the second's: said so
        r = ibqos_cli(
            "apply", path_b, "--opensm-conf", sm.conf, "--pid", sm.pid, "--sim-socket", h.sock, "--timeout", "1"
        )
        assert r.returncode == 3, r.stdout + r.stderr
        assert f"the ibqos-dla.json there is OpenSM pid {second.pid}'s: another OpenSM shares" in r.stderr


def test_status_reads_the_log_the_opensm_writes(ibqos_cli, tmp_path):
    """`status --live --opensm-conf --pid` names the engine in force from the log OpenSM
    writes (its -f), not /var/log/opensm.log (absent on a Debian host, whose units log to
    /var/log/opensm.GUID.log): before, a minhop plan on a running minhop was 'engine in force
    unknown' (exit 1)."""
    policy = tmp_path / "minhop.yaml"
    policy.write_text(
        (REPO_ROOT / "examples" / "two-class.yaml").read_text().replace("routing: dla", "routing: minhop")
    )
    plan_path = tmp_path / "minhop.plan.json"
    assert ibqos_cli("plan", policy, "-o", plan_path).returncode == 0
    conf = render_plan(load_plan(plan_path), tmp_path / "cfg")["opensm.conf"]
    net = fat_tree(leaves=1, spines=0, hosts=4).write_net(tmp_path / "fabric.net")  # no credit loop
    with Harness(net, run_dir=tmp_path / "run", ibsim="debian") as h:
        sm = h.start_sm(engine="minhop", plugin=True, conf_files=[conf], conf={"log_file": str(tmp_path / "x.log")})
        r = ibqos_cli(
            "status",
            "--live",
            *("--opensm-conf", sm.conf, "--pid", str(sm.pid), "--plan", plan_path),
            *("--sim-socket", h.sock),
            env=child_env(),
        )
        assert "engine in force: minhop, as planned" in r.stdout, r.stdout + r.stderr
        assert r.returncode == 0, r.stdout + r.stderr
        # a log naming none: the plugin's record (dla not in routing_engine: "unused") names none either
        empty = tmp_path / "empty.log"
        empty.write_text("")
        r = ibqos_cli(
            "status",
            "--live",
            *("--opensm-conf", sm.conf, "--pid", str(sm.pid), "--plan", plan_path),
            *("--sim-socket", h.sock, "--osm-log", empty),
            env=child_env(),
        )
        assert r.returncode == 1 and "engine in force unknown" in r.stdout, r.stdout + r.stderr
        assert "dla routes" not in r.stdout


def test_an_opensm_run_as_a_daemon_with_its_own_pidfile(ibqos_cli, tmp_path):
    """`opensm -B --pidfile F` forks twice before it starts: `apply --pidfile F` reaches the
    daemon (the PID its plugin records), reads its -F and -f, and verifies."""
    with sm_on_plan_a(tmp_path) as (h, sm, _, _):
        _, path_b = make_plan_file(tmp_path, "b", 60)
        sm.stop()
        pidfile, log = tmp_path / "opensm.pid", tmp_path / "daemon.log"
        argv = [paths.require_tool("opensm", "opensm"), "-B", "--pidfile", str(pidfile), "-F", str(sm.conf)]
        env = dict(h.env, LD_LIBRARY_PATH=str(paths.plugin_dir()))
        assert run_command([*argv, "-f", str(log)], env=env, cwd=tmp_path, timeout=60).returncode == 0
        wait_until(lambda: pidfile.exists() and pidfile.read_text().strip(), timeout=60)
        pid = int(pidfile.read_text())
        try:
            wait_until(lambda: own_record(sm.dumps, pid) is not None, timeout=120)
            r = ibqos_cli("apply", path_b, "--opensm-conf", sm.conf, "--pidfile", pidfile, "--sim-socket", h.sock)
            assert r.returncode == 0, r.stdout + r.stderr
            assert "read back: every port equals the plan" in r.stdout
        finally:
            os.kill(pid, signal.SIGTERM)
            wait_until(lambda: not pid_alive(pid), timeout=30)
