"""Run by test_apply_debian_unit.py inside `unshare -m`: /etc/opensm and /var/log are bound to
scratch directories, so OpenSM started with Debian's exact ExecStart (read here from
/lib/systemd/system/opensm@.service, independently of ibqos) reads and logs where it would on
an SM host, and `ibqos apply --service opensm@GUID` finds it as it would there.

Usage: debian_unit_scenario.py SCRATCH GUID IBSIM_SOCK UMAD2SIM PLUGIN_DIR PLAN_A PLAN_BAD
Prints one JSON document: every step's exit code and output, and what the files looked like.
Every dry run (`dry_runs`) also records what it changed under /etc/opensm (nothing, by
tree_snapshot). Every OpenSM it starts is stopped by PID before it exits."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ibqos import osmconf
from ibqos.apply.opensm_ctl import heavy_sweep
from ibqos.fabric.dla_record import RECORD_FILE, record_dir
from tree_snapshot import changes, snapshot

UNIT = Path("/lib/systemd/system/opensm@.service")
QOS = Path("/etc/opensm/qos-policy.conf")  # OpenSM's default qos_policy_file
IBQOS = str(Path(sys.executable).parent / "ibqos")


def unit_argv(guid: str) -> list[str]:
    line = next(ln for ln in UNIT.read_text().splitlines() if ln.startswith("ExecStart="))
    return [a.replace("%I", guid).replace("%i", guid) for a in shlex.split(line.split("=", 1)[1])]


def wait_up(log: Path, count: int, timeout: float = 120) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if log.exists() and len(re.findall(r"SUBNET UP", log.read_text(errors="replace"))) >= count:
            return
        time.sleep(0.1)
    raise SystemExit(f"no SUBNET UP #{count} in {log}")


def wait_master(env: dict, cwd: Path, timeout: float = 120) -> None:
    """OpenSM on its defaults does not flush its log (no force_log_flush), so its SUBNET UP
    may not be there yet: ask the fabric instead, as an admin would with sminfo."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        r = subprocess.run(["sminfo"], env=env, cwd=cwd, capture_output=True, text=True, timeout=30)
        if r.returncode == 0 and "SMINFO_MASTER" in r.stdout:
            return
        time.sleep(0.3)
    raise SystemExit("no master SM on the fabric")


def qos_state(log: Path, mark: int) -> dict:
    """Whether OpenSM's default QoS policy file is there, and the QoS policy errors (ERR AC..)
    OpenSM logged after byte `mark` of its log."""
    text = log.read_bytes()[mark:].decode(errors="replace")
    return {"qos": os.path.lexists(QOS), "err_ac": [ln for ln in text.splitlines() if "ERR AC" in ln]}


@contextmanager
def old_plugin(record: Path) -> Iterator[None]:
    """The record as a plugin of release 0.0.9 writes it (an upgrade OpenSM was not restarted
    after), put in place as the plugin writes it (a rename); the real one back afterwards."""
    real = record.read_text()

    def plant(text: str) -> None:
        (record.parent / "planted").write_text(text)
        os.replace(record.parent / "planted", record)

    plant(json.dumps({**json.loads(real), "plugin_version": "0.0.9"}))
    try:
        yield
    finally:
        plant(real)


def main() -> None:
    scratch, guid, sock, umad2sim, plugin_dir, plan_a, plan_bad = sys.argv[1:8]
    scratch = Path(scratch)
    for d, target in ((scratch / "etc-opensm", "/etc/opensm"), (scratch / "var-log", "/var/log")):
        d.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "--bind", str(d), target], check=True)
    env = dict(
        os.environ,
        IBSIM_SOCKNAME=sock,
        LD_PRELOAD=umad2sim,
        LD_LIBRARY_PATH=plugin_dir,
        OSM_CACHE_DIR=str(scratch / "cache"),
    )
    argv = unit_argv(guid)
    log = Path(f"/var/log/opensm.{guid}.log")
    out: dict = {"argv": argv, "steps": {}}
    work = scratch / "cwd"  # umad2sim writes sys-<pid>/ into the cwd
    work.mkdir(exist_ok=True)
    procs: list[subprocess.Popen] = []

    def start_sm() -> subprocess.Popen:
        p = subprocess.Popen(
            argv, env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        procs.append(p)
        return p

    def stop(p: subprocess.Popen) -> None:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def step(name: str, *args: str) -> None:
        r = subprocess.run(
            [IBQOS, *args],
            capture_output=True,
            text=True,
            timeout=600,
            env=dict(os.environ, OSM_CACHE_DIR=str(scratch / "cache")),
        )
        out["steps"][name] = {"rc": r.returncode, "stdout": r.stdout, "stderr": r.stderr}

    def dry(name: str, *args: str) -> None:
        """A preview, with the tree before and after it: it must write nothing."""
        before = snapshot(Path("/etc/opensm"))
        step(name, *args, "--dry-run")
        out["steps"][name]["changed"] = changes(before, snapshot(Path("/etc/opensm")))
        out.setdefault("dry_runs", []).append(name)

    unit = ("--service", f"opensm@{guid}")
    try:
        sm = start_sm()
        wait_master(env, work)
        time.sleep(1.0)  # its first sweep configures every port
        out["pid_1"] = sm.pid
        dry("dry_init_conf", "apply", plan_a, *unit, "--init-conf")
        dry("dry_without_conf", "apply", plan_a, *unit, "--sim-socket", sock)
        dry("dry_rollback_without_store", "rollback", *unit)
        step("apply_without_conf", "apply", plan_a, "--service", f"opensm@{guid}", "--sim-socket", sock)
        step("init_conf", "apply", plan_a, "--service", f"opensm@{guid}", "--init-conf")
        conf = Path("/etc/opensm/opensm.conf")
        out["conf_after_init"] = conf.read_text() if conf.exists() else None
        # Debian as shipped: the conf names OpenSM's default qos_policy_file and there is none
        # (OpenSM runs quietly without it), so v0000 holds it absent
        QOS.unlink()
        # restart as systemd would: the same command line, a new process
        stop(sm)
        ups = len(re.findall(r"SUBNET UP", log.read_text(errors="replace")))
        sm = start_sm()
        try:
            wait_up(log, ups + 1)
        except SystemExit as e:  # OpenSM on Debian's defaults flushes its log late: why no conf?
            raise SystemExit(f"{e}; init_conf: {out['steps']['init_conf']}") from None
        out["pid_2"] = sm.pid
        out["log_after_restart"] = "\n".join(
            ln for ln in log.read_text(errors="replace").splitlines() if "dla" in ln or "ERR" in ln
        )[-4000:]
        dry("dry_conf_not_adopted", "apply", plan_a, *unit, "--sim-socket", sock)
        dry("dry_init_conf_exists", "apply", plan_a, *unit, "--init-conf")
        step("apply_bad_first", "apply", plan_bad, *unit, "--sim-socket", sock)  # restores v0000
        mark = log.stat().st_size
        heavy_sweep(sm.pid, record_dir(osmconf.options(conf), sm.pid))  # the next heavy sweep after it
        out["after_failed_first_apply"] = qos_state(log, mark)
        step("apply", "apply", plan_a, "--service", f"opensm@{guid}", "--sim-socket", sock)
        # the plugin of an older release still loaded (an upgrade without a restart): the
        # refusal and status's finding name the unit given, the one to restart
        with old_plugin(record_dir(osmconf.options(conf), sm.pid) / RECORD_FILE):
            for name, args in (
                ("apply_same_old_plugin", ("apply", plan_a, *unit, "--sim-socket", sock)),
                ("status_old_plugin", ("status", "--live", *unit, "--sim-socket", sock, "--json")),
            ):
                step(name, *args)
        step("apply_bad", "apply", plan_bad, "--service", f"opensm@{guid}", "--sim-socket", sock)
        dry("dry_store_same_plan", "apply", plan_a, *unit, "--sim-socket", sock)
        dry("dry_store_other_plan", "apply", plan_bad, *unit, "--keep", "1", "--allow-pkey-removal", "--accept-edits")
        dry("dry_rollback", "rollback", "v0000", *unit, "--sim-socket", sock)
        dry("dry_init_conf_store", "apply", plan_a, *unit, "--init-conf")
        step("history", "history", *unit, "--json")
        step("status", "status", "--live", "--service", f"opensm@{guid}", "--plan", plan_a, "--sim-socket", sock)
        out["conf_is_symlink"] = conf.is_symlink()
        out["qos_after_apply"] = QOS.is_file()
        mark = log.stat().st_size
        step("rollback_v0000", "rollback", "v0000", *unit, "--sim-socket", sock)
        out["after_rollback_v0000"] = qos_state(log, mark)
        out["default_log_exists"] = Path("/var/log/opensm.log").exists()
    finally:
        for p in procs:
            stop(p)
        print(json.dumps(out))


if __name__ == "__main__":
    main()
