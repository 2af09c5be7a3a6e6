"""`ibqos monitor --opensm-conf` on an SM host after a failover: OpenSM A reads the file and
runs plan A as master, then B (priority 15, its own opensm.conf, SIM_HOST) takes the subnet over
and A goes STANDBY. The monitor asked `sminfo` only while no OpenSM read the file, so it judged
the shares against plan A as if A's SM ran the subnet: exit 0, nothing exported. Now it asks
whether the OpenSM it follows is the master (at most every monitor.opensm.ROLE_EVERY seconds
while it is, every sample while it is not): finding `standby` (the line `ibqos status --live`
gives), `ibqos_opensm_standby` 1, one stderr line when it starts and one when A is the master
again (B stopped), and the gauge back to 0."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from apply_helpers import child_env, live_sm_patched, monitor_once, sm_on_plan_a  # noqa: F401 (fixture)
from ibqos import paths
from ibqos.proc import wait_until
from prometheus_client.parser import text_string_to_metric_families
from test_apply_two_sms import B_CONF, SKIP, handed_over

pytestmark = [pytest.mark.fabric, pytest.mark.skipif(SKIP is not None, reason=SKIP or "")]


def _gauge(prom: Path) -> float | None:
    try:
        text = prom.read_text()
    except FileNotFoundError:
        return None
    samples = (s for f in text_string_to_metric_families(text) for s in f.samples)
    return next((s.value for s in samples if s.name == "ibqos_opensm_standby"), None)


def test_the_monitor_on_a_standby_says_the_master_runs_its_own_files_and_recovers_when_it_returns(ibqos_cli, tmp_path):
    # A polls the master every second (B's too): B stopped, A takes the subnet back in seconds
    with sm_on_plan_a(tmp_path, ibsim="patched", ibsim_args=("-a", "8"), conf=dict(B_CONF, sm_priority=0)) as (
        h,
        a,
        _,
        path_a,
    ):
        prom, err = tmp_path / "ibqos.prom", tmp_path / "monitor.err"
        assert monitor_once(ibqos_cli, h, a, path_a, prom, "standby", "ibqos_opensm_standby") == (0, [], {(): 0.0})

        b, port_a, port_b = handed_over(h, a, tmp_path)
        line = (
            f"master SM: 0x{port_b.guid:016x} (lid {port_b.lid}, priority 15); this OpenSM (pid {a.pid}, port "
            f"0x{port_a.guid:016x}) is not it (standby): the master SM configures the subnet from its own files, "
            f"not from {a.conf}, which is what ibqos applied and verified here; run 'ibqos status --live' on the "
            "master's host (and 'ibqos apply PLAN' there, if it runs another plan)"
        )
        # one interval (cron): before, exit 0, no finding and no gauge, the shares judged against plan A
        assert monitor_once(ibqos_cli, h, a, path_a, prom, "standby", "ibqos_opensm_standby") == (
            1,
            [line],
            {(): 1.0},
        )

        # a monitor that runs on (--listen, or a loop): B stopped, A is the master again
        cmd = [*ibqos_cli.argv, "monitor", "--plan", str(path_a), "--opensm-conf", str(a.conf)]
        cmd += ["--sim-socket", h.sock, "--interval", "0.3", "--textfile", str(prom), "--json"]
        prom.unlink()
        proc: subprocess.Popen[bytes] | None = None
        try:
            with err.open("w") as err_out:
                proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err_out, env=child_env())
            wait_until(lambda: _gauge(prom) == 1.0, timeout=60, what="ibqos_opensm_standby 1")
            b.stop()
            # until A takes over, sminfo asks the gone B and fails
            wait_until(lambda: f"sm guid 0x{port_a.guid:x}," in h.diag(["sminfo"], check=False).stdout, timeout=90)
            wait_until(lambda: _gauge(prom) == 0.0, timeout=60, what="ibqos_opensm_standby 0")
            assert proc.poll() is None, err.read_text()
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=30)
        said = [s for s in err.read_text().splitlines() if s]
        # A may say SMINFO_STANDBY/NOTACTIVE for itself between B's stop and its own takeover:
        # that is still not A running the subnet, and a line of its own
        assert said[0] == f"ibqos: {line}", said
        assert said[-2:] == [
            f"ibqos: master SM: 0x{port_a.guid:016x} (lid {port_a.lid}, priority 0), this OpenSM (pid {a.pid}) "
            f"again: the plan of {a.conf} is in force",
            "ibqos: interrupted by SIGTERM",  # the test's stop
        ], said
        assert all("standby" in s or "none yet" in s for s in said[1:-2]), said


def test_the_monitor_on_the_master_asks_sminfo_once_a_minute_not_every_sample(ibqos_cli, live_sm_patched, tmp_path):
    """The cost side: on a healthy SM host (the OpenSM that reads the file is the master) the
    first sample asks sminfo, and the next ones within ROLE_EVERY (60 s) do not: 6 intervals
    of 0.3 s, one sminfo (counted by a wrapper first in PATH), not 6."""
    h, sm, _, path_a = live_sm_patched
    calls, bin_dir = tmp_path / "sminfo.calls", tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "sminfo"
    real = paths.require_tool("sminfo", "infiniband-diags")
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    env = child_env({"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    r = ibqos_cli(
        "monitor", "--plan", path_a, "--opensm-conf", sm.conf, "--sim-socket", h.sock, "--count", "6",
        "--interval", "0.3", "--json", env=env,
    )  # fmt: skip
    assert r.returncode == 0 and not json.loads(r.stdout)["findings"], r.stdout + r.stderr
    assert len(calls.read_text().splitlines()) == 1, calls.read_text()
