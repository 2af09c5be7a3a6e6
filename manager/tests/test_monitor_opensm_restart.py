"""`ibqos monitor --opensm-conf` follows the OpenSM that reads the file across a restart: the
one it followed stops (its PID gone), the monitor says so in one line, exports
`ibqos_monitor_opensm_running 0` and samples on; the next OpenSM, started with another
--dump_files_dir, is found at the next sample (one line) and dla's record read where it dumps.
Before, the monitor found its OpenSM once, at start, and read the first one's dump directory
for the rest of the run (docs/monitor.md, "What it reads")."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from apply_helpers import child_env, live_sm_patched, opensm_restarted  # noqa: F401 (fixture)
from ibqos.fabric.dla_record import RECORD_FILE
from ibqos.proc import wait_until
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.fabric


def _metrics(prom: Path) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    try:
        text = prom.read_text()
    except FileNotFoundError:
        return {}
    return {(s.name, tuple(s.labels.items())): s.value for f in text_string_to_metric_families(text) for s in f.samples}


def test_the_monitor_follows_opensm_across_a_restart_with_another_dump_directory(ibqos_cli, live_sm_patched, tmp_path):
    h, sm, _plan_a, path_a = live_sm_patched
    prom, err = tmp_path / "ibqos.prom", tmp_path / "monitor.err"
    d1, d2 = tmp_path / "dumps1", tmp_path / "dumps2"
    for d in (d1, d2):
        d.mkdir()
    dla = ("ibqos_routing_engine_info", (("engine", "dla"),))
    running = ("ibqos_monitor_opensm_running", ())
    cmd = [*ibqos_cli.argv, "monitor", "--plan", str(path_a), "--opensm-conf", str(sm.conf)]
    cmd += ["--sim-socket", h.sock, "--interval", "0.3", "--textfile", str(prom), "--json"]

    def exported(want: dict) -> bool:
        assert proc is not None and proc.poll() is None, err.read_text()  # it samples on, whatever runs
        got = _metrics(prom)
        return all(got.get(k) == v for k, v in want.items())

    proc: subprocess.Popen[bytes] | None = None
    try:
        with opensm_restarted(h, sm, tmp_path / "osm1", "--dump_files_dir", str(d1), dumps=d1) as osm1:
            (sm.dumps / RECORD_FILE).unlink()  # the stopped first OpenSM's, in the file's dump_files_dir
            with err.open("w") as err_out:
                proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err_out, env=child_env())
            wait_until(lambda: exported({dla: 1.0, running: 1.0}), timeout=60, what="osm1's engine")
        (d1 / RECORD_FILE).unlink()  # stopped: its record is no longer written there
        wait_until(lambda: exported({running: 0.0}), timeout=60, what="no OpenSM running")
        assert dla not in _metrics(prom)
        with opensm_restarted(h, sm, tmp_path / "osm2", "--dump_files_dir", str(d2), dumps=d2) as osm2:
            wait_until(lambda: exported({dla: 1.0, running: 1.0}), timeout=60, what="osm2's engine")
            argv = " ".join(map(str, osm2.popen.args))
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
    said = [line for line in err.read_text().splitlines() if line]
    assert said == [
        f"ibqos: OpenSM pid {osm1.pid} (reading {sm.conf}) is gone and none reads it now: monitoring on",
        f"ibqos: no OpenSM was reading {sm.conf}; now following OpenSM pid {osm2.pid}: {argv}",
        "ibqos: interrupted by SIGTERM",  # the test's stop
    ], said
    assert os.path.isfile(d2 / RECORD_FILE)
