"""`ibqos testbed run` against localhost: the replayer on PATH, then the real perftest."""

from __future__ import annotations

import json
import os
import shutil
import socket

import pytest
from ibqos.proc import pid_alive
from ibqos_testbed import runplan
from ibqos_testbed.planinput import load_plan
from ibqos_testbed.results import Results
from ibqos_testbed.runner import Runner
from testbed_helpers import free_base_port


def _runplan(plan_file, tmp_path, *, duration=1, slack=10.0, client="localhost", server="localhost"):
    s = runplan.Settings(
        server=server,
        client=client,
        server_addr="localhost",
        device="mlx5_0",
        ib_port=1,
        duration=duration,
        size=65536,
        lat_size=2,
        lat_iters=1000,
        base_port=free_base_port(),
        slack=slack,
    )
    run = runplan.build(load_plan(plan_file), s)
    path, _ = runplan.write(run, tmp_path / "rp")
    return run, path


def _only_bw_phase(run):
    return run.model_copy(update={"phases": run.phases[:1]})


@pytest.mark.timeout(120)
def test_replayed_run_start_order_concurrency_and_collection(ibqos_cli, plan_file, tmp_path, replay):
    rp = replay()
    _, path = _runplan(plan_file, tmp_path, duration=2)
    r = ibqos_cli("testbed", "run", path, "-o", tmp_path / "res", env=rp.env)
    assert r.returncode == 0, r.stderr
    res = Results.load(tmp_path / "res")
    assert len(res.flows) == 1 * 4 + 4 + 4 * 4 and all(f.ok for f in res.flows)

    ev = rp.events()
    # Start order: every client connected after its server listened, per phase and port.
    listens = {(e["tool"], e["port"], e["sl"]): [] for e in ev if e["event"] == "listen"}
    for e in ev:
        key = (e["tool"], e["port"], e["sl"])
        if e["event"] == "listen":
            listens[key].append(e["t"])
        elif e["event"] == "connect":
            assert any(t < e["t"] for t in listens[key]), e
    # Concurrency: the four bandwidth flows of phase bw overlap in time.
    bw = [f for f in res.flows if f.phase == "bw"]
    assert max(f.client.started for f in bw) < min(f.client.ended for f in bw)
    spans = {}
    for e in ev:
        if e["tool"] == "ib_send_bw" and e["role"] == "client" and e["event"] in ("start", "end"):
            spans.setdefault(e["pid"], {})[e["event"]] = e["t"]
    first4 = sorted(spans.values(), key=lambda s: s["start"])[:4]
    assert max(s["start"] for s in first4) < min(s["end"] for s in first4)
    # Latency under load ran while the other SLs' bandwidth flows ran.
    for sl in range(4):
        (lat,) = [f for f in res.flows if f.phase == f"lat-loaded-sl{sl}" and f.kind == "lat"]
        loads = [f for f in res.flows if f.phase == lat.phase and f.kind == "bw"]
        assert {f.sl for f in loads} == {0, 1, 2, 3} - {sl}
        assert all(f.client.started < lat.client.started < f.client.ended for f in loads)
    # Collection: stdout/stderr files and exit codes of every process.
    for f in res.flows:
        for p in (f.server, f.client):
            assert p.returncode == 0 and not p.timed_out
            assert (tmp_path / "res" / p.stdout).read_text().strip().endswith("-" * 87)
            assert (tmp_path / "res" / p.stderr).exists()
    # And the report of what was collected passes against the plan's predictions.
    rep = ibqos_cli("testbed", "report", tmp_path / "res", "--json")
    assert rep.returncode == 0, rep.stderr
    assert json.loads(rep.stdout)["passed"] is True


@pytest.mark.timeout(60)
def test_per_flow_timeout_kills_and_keeps_other_flows(plan_file, tmp_path, replay):
    rp = replay(hang="ib_send_bw:2:client")
    run, _ = _runplan(plan_file, tmp_path, duration=1, slack=4.0)
    res = Runner(_only_bw_phase(run), tmp_path / "res").execute()
    by_sl = {f.sl: f for f in res.flows}
    assert by_sl[2].error == "ib_send_bw on localhost timed out after 5 s and was killed"
    assert by_sl[2].client.timed_out
    assert 4.5 < by_sl[2].client.ended - by_sl[2].client.started < 9
    assert [by_sl[sl].error for sl in (0, 1, 3)] == [None] * 3
    hung = [e["pid"] for e in rp.events() if e["event"] == "hang"]
    assert hung and not any(pid_alive(pid) for pid in hung)


@pytest.mark.timeout(60)
def test_port_in_use_fails_that_flow_only(plan_file, tmp_path, replay):
    replay()
    run, _ = _runplan(plan_file, tmp_path)
    busy = run.phases[0].flows[1]
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", busy.tcp_port))
        s.listen(1)
        res = Runner(_only_bw_phase(run), tmp_path / "res").execute()
    errors = {f.id: f.error for f in res.flows}
    assert errors.pop(busy.id) == f"TCP port {busy.tcp_port} already in use on localhost"
    assert set(errors.values()) == {None}


@pytest.mark.timeout(60)
def test_missing_binary_fails_its_flows_only(plan_file, tmp_path, replay):
    replay(tools=("ib_send_lat",))  # PATH has no ib_send_bw at all
    run, _ = _runplan(plan_file, tmp_path)
    res = Runner(run.model_copy(update={"phases": run.phases[:2]}), tmp_path / "res").execute()
    errors = {f.phase + "/" + f.id: f.error for f in res.flows}
    assert errors == {
        "bw/bw-sl0": "ib_send_bw not found on localhost: install perftest there",
        "bw/bw-sl1": "ib_send_bw not found on localhost: install perftest there",
        "bw/bw-sl2": "ib_send_bw not found on localhost: install perftest there",
        "bw/bw-sl3": "ib_send_bw not found on localhost: install perftest there",
        "lat-idle-sl0/lat-idle-sl0": None,
    }


@pytest.mark.timeout(90)
@pytest.mark.skipif(shutil.which("ssh") is None, reason="needs the ssh client")
def test_unreachable_host_is_one_line_per_flow(ibqos_cli, plan_file, tmp_path, replay):
    replay()
    run, path = _runplan(plan_file, tmp_path, client="ibqos-no-such-node.invalid")
    r = ibqos_cli("testbed", "run", path, "-o", tmp_path / "res")
    assert r.returncode == 3 and "Traceback" not in r.stderr
    flow_lines = [ln for ln in r.stderr.splitlines() if "flow " in ln]
    assert len(flow_lines) == sum(len(p.flows) for p in run.phases)
    assert all("host ibqos-no-such-node.invalid unreachable: ssh:" in ln for ln in flow_lines)


@pytest.mark.timeout(120)
@pytest.mark.skipif(shutil.which("ib_send_bw") is None, reason="needs Debian package perftest")
def test_real_perftest_without_rdma_device(ibqos_cli, plan_file, tmp_path):
    _, path = _runplan(plan_file, tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("IBQOS_REPLAY")}
    r = ibqos_cli("testbed", "run", path, "-o", tmp_path / "res", env=env)
    assert r.returncode == 3, r.stderr
    assert "Traceback" not in r.stderr
    res = Results.load(tmp_path / "res")
    assert len(res.flows) == 24
    for f in res.flows:
        assert f.error.startswith("no RDMA device on localhost"), f.error
        assert f"flow {f.id} ({f.phase}): {f.error}" in r.stderr
    assert (
        r.stderr.strip().splitlines()[-1] == f"ibqos: error: 24 of 24 flows failed; what ran is in {tmp_path / 'res'}"
    )
