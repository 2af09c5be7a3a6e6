"""`ibqos apply` fails and rolls back when OpenSM logs an error in the sweep it starts: a
P_Key match rule whose partition does not exist (ERR AC14) and a plan whose partitions file
defines it (applied whole)."""

from __future__ import annotations

import os
import signal
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from apply_helpers import make_plan_file, opensm_restarted
from ibqos.conformance import diff_programmed, expected_from_plan
from ibqos.fabric.live import read_live
from ibqos.osmconf import parse
from ibqos.paths import REPO_ROOT
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from ibqos.proc import wait_until
from ibqos.render import render_plan
from ibqos_sim.harness.topology import dragonfly

pytestmark = pytest.mark.fabric


def _plan(tmp: Path, name: str, pkey: str | None = None, partitions: str | None = None):
    doc = yaml.safe_load((REPO_ROOT / "examples" / "two-class.yaml").read_text())
    doc["classes"][0]["match"] = {"pkey": [pkey]} if pkey else {}
    if partitions:
        (tmp / f"{name}.partitions.conf").write_text(partitions)
        doc["partitions"] = f"{name}.partitions.conf"
    (tmp / f"{name}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    plan = make_plan(load_policy(tmp / f"{name}.yaml"))
    plan.save(tmp / f"{name}.plan.json")
    return plan, tmp / f"{name}.plan.json"


@contextmanager
def _sm_with_partitions(tmp_path: Path, ibsim_fabric):
    """OpenSM with the dla plugin on plan A and a partitions file without P_Key 0x0a01 (a path
    OpenSM reads only at start), and plan B, whose class matches that P_Key: OpenSM rejects
    B's rule (ERR AC14). (h, sm, B's file, plan A, the partitions file)."""
    plan_a, _ = _plan(tmp_path, "a")
    files = render_plan(plan_a, tmp_path / "cfg-a")
    part = tmp_path / "partitions.conf"
    part.write_text("Default=0x7fff : ALL=full ;\n")
    net = dragonfly(3, 1, 1).write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        sm = h.start_sm(
            engine="dla,minhop",
            plugin=True,
            conf_files=[files["opensm.conf"]],
            conf={"partition_config_file": str(part)},
        )
        yield h, sm, _plan(tmp_path, "b", pkey="0x0a01")[1], plan_a, part


def test_a_missing_partition_fails_the_apply_and_a_defined_one_passes(ibqos_cli, tmp_path, ibsim_fabric):
    with _sm_with_partitions(tmp_path, ibsim_fabric) as (h, sm, path_b, plan_a, part):

        def apply(path):
            return ibqos_cli(
                "apply", path, "--opensm-conf", sm.conf, "--pid", sm.pid, "--sim-socket", h.sock, timeout=300
            )

        policy_before = Path(parse(sm.conf.read_text())["qos_policy_file"]).read_text()
        r = apply(path_b)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "ERR AC14" in r.stderr and "rolled back" in r.stderr, r.stderr
        assert Path(parse(sm.conf.read_text())["qos_policy_file"]).read_text() == policy_before
        assert diff_programmed(read_live(h.env), expected_from_plan(plan_a)) == []

        plan_c, path_c = _plan(
            tmp_path, "c", pkey="0x0a01", partitions="Default=0x7fff : ALL=full ;\nt=0x0a01 : ALL=full ;\n"
        )
        r = apply(path_c)
        assert r.returncode == 0, r.stdout + r.stderr
        assert Path(parse(sm.conf.read_text())["partition_config_file"]) == part
        assert "t=0x0a01" in part.read_text()
        assert diff_programmed(read_live(h.env), expected_from_plan(plan_c)) == []
        assert sm.alive()


def test_a_log_that_would_hide_the_sweeps_errors_is_refused_before_anything_is_written(
    ibqos_cli, tmp_path, ibsim_fabric
):
    """redsm: apply rolls back on the sweep's ERR lines, and OpenSM logs them only while
    log_flags has its ERROR bit (0x01; osm_log drops a line whose level is off). A quiet SM
    (`log_flags 0x00`) took the ERR AC14 plan above: exit 0, 'the fabric equals the plan', and
    OpenSM ran without the policy's P_Key rule. Now one line naming the conf's log_flags line,
    exit 2, before anything is written; the default 0x03 applies as before."""
    with _sm_with_partitions(tmp_path, ibsim_fabric) as (h, sm, path_b, _, _):
        text = sm.conf.read_text()
        sm.conf.write_text(text + "log_flags 0x00\n")
        line = len(text.splitlines()) + 1
        before = {p: p.read_bytes() for p in sm.conf.parent.glob("*.conf")}
        args = ("apply", path_b, "--opensm-conf", sm.conf, "--pid", sm.pid, "--sim-socket", h.sock)
        r = ibqos_cli(*args, timeout=300)
        assert r.returncode == 2, r.stdout + r.stderr
        assert r.stderr.splitlines() == [
            f"ibqos: error: {sm.conf}:{line}: log_flags: 0x00 has OpenSM log no errors (its ERROR bit, 0x01, "
            "is off): apply could not see OpenSM reject the QoS policy or partitions in the sweep, and "
            "would verify them anyway; set log_flags 0x03 (OpenSM's default) or another value with 0x01"
        ], r.stderr
        assert {p: p.read_bytes() for p in before} == before and not (sm.conf.parent / "ibqos.d" / "v0000").exists()
        sm.conf.write_text(text + "log_flags 0x03\n")
        r = ibqos_cli(*args, timeout=300)
        assert r.returncode == 1 and "ERR AC14" in r.stderr, r.stdout + r.stderr
        assert sm.alive()


def test_a_log_apply_cannot_read_is_refused_before_anything_is_written(ibqos_cli, tmp_path, ibsim_fabric):
    """redsm: the sweep's ERR lines are read from OpenSM's log file. OpenSM run with `-f stdout`
    (its own name for its stdout: the journal under systemd) took the ERR AC14 plan: apply
    watched a file named 'stdout' in OpenSM's directory, saw nothing, exit 0. A log removed
    while OpenSM runs (`rm` of a big log: OpenSM writes the removed file until SIGUSR1) likewise.
    Now one line each, before anything is written; after SIGUSR1 the same plan is rolled back
    on ERR AC14."""
    with _sm_with_partitions(tmp_path, ibsim_fabric) as (h, sm, path_b, _, _):
        state = sm.conf.parent / "ibqos.d" / "v0000"
        with opensm_restarted(h, sm, tmp_path / "osm", "-f", "stdout", log=False) as osm:
            r = ibqos_cli("apply", path_b, "--opensm-conf", sm.conf, "--pid", osm.pid, "--sim-socket", h.sock)
            assert r.returncode == 2, r.stdout + r.stderr
            assert r.stderr.splitlines() == [
                f"ibqos: error: OpenSM (pid {osm.pid}) -f/--log_file: stdout: OpenSM logs to its stdout (under "
                "systemd, the journal), where apply cannot read the sweep's ERR lines, so it would verify a "
                "policy OpenSM rejected; give OpenSM a log file (-f FILE, or log_file FILE and a restart)"
            ], r.stderr
            assert not state.exists()
        with opensm_restarted(h, sm, tmp_path / "osm2") as osm:
            log = tmp_path / "osm2" / "opensm.log"
            log.unlink()
            args = ("apply", path_b, "--opensm-conf", sm.conf, "--pid", osm.pid, "--sim-socket", h.sock)
            r = ibqos_cli(*args)
            assert r.returncode == 3, r.stdout + r.stderr
            assert r.stderr.startswith(f"ibqos: error: OpenSM (pid {osm.pid}) logs to {log}, which does not exist")
            assert f"'kill -USR1 {osm.pid}'" in r.stderr and not state.exists(), r.stderr
            os.kill(osm.pid, signal.SIGUSR1)  # OpenSM reopens its log, as after logrotate
            wait_until(log.exists, timeout=30, what="OpenSM to reopen its log")
            r = ibqos_cli(*args)
            assert r.returncode == 1 and "ERR AC14" in r.stderr, r.stdout + r.stderr


def test_an_error_every_sweep_logged_before_the_apply_is_not_the_plans(ibqos_cli, tmp_path, ibsim_fabric):
    """hostile37: the admin's own partitions file gave more P_Keys than the switches' tables
    hold, and OpenSM logged 'ERR 0512: Failed to set PKey ... Pkey table is full' in every
    sweep, before any apply: every apply failed on it and rolled back (exit 1, 'OpenSM logged
    636 error(s) in the sweep'), though the plan has no part in it and status said OK. An error
    the log held word for word before the apply is named in a note and fails nothing; one it
    did not hold (ERR AC14, the plan's own rule) still fails the apply."""
    with _sm_with_partitions(tmp_path, ibsim_fabric) as (h, sm, path_b, _, part):
        tenants = "".join(f"t{i}=0x{0x100 + i:04x} : ALL_CAS=limited, ALL_SWITCHES=full ;\n" for i in range(1, 60))
        part.write_text("Default=0x7fff : ALL=full ;\n" + tenants)
        os.kill(sm.pid, signal.SIGHUP)  # a heavy sweep on the file, as the admin's OpenSM ran them

        def swept_with_the_error() -> bool:  # that sweep ended: no error of it still to come
            text = sm.log.read_text(errors="replace")
            return (i := text.rfind("ERR 0512:")) >= 0 and "SUBNET UP" in text[i:]

        wait_until(swept_with_the_error, timeout=120)

        def apply(path):
            return ibqos_cli(
                "apply", path, "--opensm-conf", sm.conf, "--pid", sm.pid, "--sim-socket", h.sock, timeout=300
            )

        plan_c, path_c = make_plan_file(tmp_path, "c", 60)
        r = apply(path_c)
        assert r.returncode == 0, r.stdout + r.stderr
        note = next(ln for ln in r.stdout.splitlines() if ln.startswith("note: OpenSM logged"))
        assert "that it logged before this apply too" in note and "ERR 0512: Failed to set PKey" in note, note
        assert diff_programmed(read_live(h.env), expected_from_plan(plan_c)) == []

        r = apply(path_b)  # its P_Key rule names no partition: ERR AC14, new
        assert r.returncode == 1 and "ERR AC14" in r.stderr and "rolled back" in r.stderr, r.stderr
        assert "more it logged before this apply too" in r.stderr, r.stderr
        assert diff_programmed(read_live(h.env), expected_from_plan(plan_c)) == []
        assert sm.alive()
