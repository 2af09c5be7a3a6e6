"""`ibqos monitor --verdict`: the verifier's credit-loop verdict on the routing `ibqos status
--live --verdict` read back, exported as that run reached it and with when it read the tables
(docs/monitor.md, "Credit loops"), on real OpenSM routing of ibsim: minhop on the 72-CA
dragonfly has a credit loop, dla has none (as test_redline.py finds)."""

from __future__ import annotations

import json
import time

import pytest
from apply_helpers import make_plan_file
from ibqos.verdict import load_verdict
from ibqos_sim.harness.topology import dragonfly
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.fabric


@pytest.mark.parametrize(
    ("chain", "plugin", "engine", "loop", "status_rc"),
    [("minhop", False, "minhop", True, 1), ("dla,minhop", True, "dla", False, 0)],
)
def test_the_monitor_exports_the_verdict_status_reached_on_the_tables_it_read(
    ibqos_cli, tmp_path, ibsim_fabric, chain, plugin, engine, loop, status_rc
):
    _, plan = make_plan_file(tmp_path, "a", 40)
    net = dragonfly(4, 2, 2, 9).write_net(tmp_path / "fabric.net")
    verdict, prom = tmp_path / "verdict.json", tmp_path / "ibqos.prom"
    with ibsim_fabric(net, run_dir=tmp_path / "run", ibsim="patched") as h:
        sm = h.start_sm(engine=chain, plugin=plugin, conf={"qos": "TRUE"})
        before = time.time()
        status = ibqos_cli("status", "--live", "--osm-log", sm.log, "--verdict", verdict, env=h.env)
        after = time.time()
        mon = ibqos_cli(
            "monitor", "--plan", plan, "--once", "--json", "--interval", "0.2",
            "--verdict", verdict, "--textfile", prom, env=h.env,
        )  # fmt: skip
    assert status.returncode == status_rc, status.stdout + status.stderr
    v = load_verdict(verdict)
    assert (v.engine, v.credit_loop) == (engine, loop) and v.source.startswith("live:")
    assert before <= v.read_at <= after
    assert mon.returncode == 0, mon.stdout + mon.stderr
    assert json.loads(mon.stdout)["credit_loop"] == json.loads(verdict.read_text())
    got = {
        (s.name, tuple(s.labels.items())): s.value
        for f in text_string_to_metric_families(prom.read_text())
        for s in f.samples
    }
    assert got[("ibqos_credit_loop", (("engine", engine),))] == (1.0 if loop else 0.0)
    assert got[("ibqos_credit_loop_read_timestamp_seconds", ())] == pytest.approx(v.read_at, abs=1e-3)


def test_without_a_verdict_file_yet_there_is_no_credit_loop_metric(ibqos_cli, tmp_path, ibsim_fabric):
    """cron's first `status` has not run: no verdict, not a 0 (and not an error)."""
    _, plan = make_plan_file(tmp_path, "a", 40)
    net = dragonfly(3, 1, 1).write_net(tmp_path / "fabric.net")
    prom = tmp_path / "ibqos.prom"
    with ibsim_fabric(net, run_dir=tmp_path / "run", ibsim="patched") as h:
        h.start_sm(engine="dla,minhop", plugin=True, conf={"qos": "TRUE"})
        mon = ibqos_cli(
            "monitor", "--plan", plan, "--once", "--json", "--interval", "0.2",
            "--verdict", tmp_path / "verdict.json", "--textfile", prom, env=h.env,
        )  # fmt: skip
    assert mon.returncode == 0, mon.stdout + mon.stderr
    assert json.loads(mon.stdout)["credit_loop"] is None
    text = prom.read_text()
    assert "ibqos_credit_loop{" not in text and "ibqos_credit_loop_read_timestamp_seconds" not in text
    assert "ibqos_credit_loop_verdict_unreadable 0.0" in text  # no file yet is not a bad one


def test_a_verdict_that_cannot_be_written_is_said_before_the_fabric_is_read(ibqos_cli, tmp_path):
    """No fabric here: a status that read first would exit 3; the bad --verdict is exit 2."""
    cp = ibqos_cli(
        "status", "--live", "--sim-socket", "ibqos-test-no-such-ibsim", "--verdict", tmp_path / "no-dir" / "v.json"
    )
    assert cp.returncode == 2, cp.stdout + cp.stderr
    assert cp.stderr.startswith("ibqos: error: ") and "--verdict" in cp.stderr and "no directory" in cp.stderr
    assert cp.stderr.count("\n") == 1


def test_a_verdict_is_kept_only_for_tables_read_now(ibqos_cli, tmp_path):
    """A run directory's tables were read when it was made: no verdict stamped with now."""
    (tmp_path / "run").mkdir()
    cp = ibqos_cli("status", tmp_path / "run", "--verdict", tmp_path / "v.json")
    assert cp.returncode == 2, cp.stdout + cp.stderr
    assert cp.stderr.startswith("ibqos: error: ") and "--verdict" in cp.stderr and "--live" in cp.stderr
    assert not (tmp_path / "v.json").exists()
