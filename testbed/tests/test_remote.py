"""The ssh path of the runner, with an `ssh` on PATH that runs the remote command here.

No sshd is needed: the stand-in logs its arguments and runs the remote script with sh, which
is what a real ssh does on the node. So the remote wrapper (PID report, node-side timeout),
the readiness check through /proc/net/tcp and the kill of a straggler by its remote PID
all run for real.
"""

from __future__ import annotations

import json
import re
import shlex
import stat
import sys

import pytest
from ibqos.proc import pid_alive
from ibqos_testbed import diagnose, runplan
from ibqos_testbed.hosts import Host, parse_listening
from ibqos_testbed.planinput import load_plan
from ibqos_testbed.runner import Runner
from testbed_helpers import free_base_port

FAKE_SSH = """#!{python}
import json, os, sys
args = sys.argv[1:]
while args and args[0] == "-o":
    args = args[2:]
host, script = args[0], " ".join(args[1:])
with open({log!r}, "a") as f:
    f.write(json.dumps({{"host": host, "script": script}}) + "\\n")
if host.endswith(".invalid"):
    sys.stderr.write(f"ssh: Could not resolve hostname {{host}}: Name or service not known\\n")
    sys.exit(255)
os.execvp("sh", ["sh", "-c", script])
"""


@pytest.fixture
def fake_ssh(tmp_path, replay):
    rp = replay()
    log = tmp_path / "ssh.jsonl"
    ssh = rp.bin_dir / "ssh"
    ssh.write_text(FAKE_SSH.format(python=sys.executable, log=str(log)))
    ssh.chmod(ssh.stat().st_mode | stat.S_IXUSR)
    return rp, log


def _bw_phase(plan_file, *, server="node1", client="node2", slack=4.0):
    s = runplan.Settings(
        server=server,
        client=client,
        server_addr="localhost",
        device="mlx5_0",
        ib_port=1,
        duration=1,
        size=65536,
        lat_size=2,
        lat_iters=1000,
        base_port=free_base_port(),
        slack=slack,
    )
    run = runplan.build(load_plan(plan_file), s)
    return run.model_copy(update={"phases": run.phases[:1]})


@pytest.mark.timeout(60)
def test_remote_run_reports_pids_and_kills_stragglers_on_the_node(plan_file, tmp_path, fake_ssh, monkeypatch):
    rp, log = fake_ssh
    monkeypatch.setenv("IBQOS_REPLAY_HANG", "ib_send_bw:1:client")
    res = Runner(_bw_phase(plan_file), tmp_path / "res").execute()
    errors = {f.sl: f.error for f in res.flows}
    assert errors == {0: None, 1: "ib_send_bw on node2 timed out after 5 s and was killed", 2: None, 3: None}
    calls = [json.loads(ln) for ln in log.read_text().splitlines()]
    assert {c["host"] for c in calls} == {"node1", "node2"}
    starts = [c["script"] for c in calls if "ib_send_bw" in c["script"]]
    assert len(starts) == 8 and all("exec timeout -k 5 10 ib_send_bw" in s for s in starts)
    # The hung client was killed on its node by the PID the wrapper reported.
    err = (tmp_path / "res" / res.flows[1].client.stderr).read_text()
    pid = int(re.search(r"ibqos-remote-pid (\d+)", err).group(1))
    assert any(c["script"].startswith(f"kill -TERM {pid} ") for c in calls)
    hung = [e["pid"] for e in rp.events() if e["event"] == "hang"]
    assert hung and all(not pid_alive(p) for p in hung)


@pytest.mark.timeout(60)
def test_unreachable_node_fails_each_flow_in_one_line(ibqos_cli, plan_file, tmp_path, fake_ssh):
    rp, _ = fake_ssh
    run = _bw_phase(plan_file, client="node9.invalid")
    path, _ = runplan.write(run, tmp_path / "rp")
    r = ibqos_cli("testbed", "run", path, env=rp.env)
    assert r.returncode == 3 and "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("ibqos: flow ")]
    assert lines == [
        f"ibqos: flow bw-sl{sl} (bw): host node9.invalid unreachable: ssh: Could "
        "not resolve hostname node9.invalid: Name or service not known"
        for sl in range(4)
    ]


def test_results_directory_is_never_mixed(ibqos_cli, plan_file, tmp_path, replay):
    replay()
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "results.json").write_text("{}")
    path, _ = runplan.write(_bw_phase(plan_file, server="localhost", client="localhost"), tmp_path / "rp")
    r = ibqos_cli("testbed", "run", path, "-o", tmp_path / "res")
    assert r.returncode == 2 and "already holds the results of a run" in r.stderr


def test_remote_script_quotes_arguments():
    argv = ["ib_send_bw", "-d", "mlx5_0", "-x", "a b'c;$(x)"]
    sh, dash_c, inner = shlex.split(Host._remote_script(argv, 40))
    assert (sh, dash_c) == ("sh", "-c")
    first, second = inner.split("; ", 1)
    assert first == "echo ibqos-remote-pid $$ >&2"
    assert shlex.split(second) == ["exec", "timeout", "-k", "5", "45", *argv]


def test_parse_listening_reads_listen_state_only():
    text = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid
   0: 00000000:4853 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0
   1: 0100007F:4854 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0
  sl  local_address                         remote_address                        st
   0: 00000000000000000000000000000000:4855 00000000000000000000000000000000:0000 0A
"""
    assert parse_listening(text) == {0x4853, 0x4855}


@pytest.mark.parametrize(
    "kw,expected",
    [
        (
            {"returncode": 255, "stderr": "ssh: connect to host n1 port 22: Connection refused\n", "remote": True},
            "host n1 unreachable: ssh: connect to host n1 port 22: Connection refused",
        ),
        (
            {"returncode": 127, "stderr": "timeout: failed to run command 'ib_send_bw': No such file", "remote": True},
            "ib_send_bw not found on n1: install perftest there",
        ),
        (
            {"returncode": 124, "stderr": "", "remote": True, "timeout": 40},
            "ib_send_bw on n1 timed out after 40 s and was killed",
        ),
        (
            {"returncode": 1, "stderr": "No IB devices found\n"},
            "no RDMA device on n1 (ib_send_bw: No IB devices found)",
        ),
        ({"returncode": 1, "stderr": "IB device mlx5_3 not found\n"}, "RDMA device mlx5_3 not found on n1"),
        ({"returncode": 1, "stderr": "Couldn't listen to port 18515\n"}, "TCP port 18515 already in use on n1"),
        (
            {"returncode": 1, "stderr": "Couldn't connect to n0:18515\n"},
            "ib_send_bw on n1 could not reach its server at n0:18515",
        ),
        (
            {"returncode": 1, "stderr": "ibqos-remote-pid 12\n Failed to modify QP to RTR\n"},
            "ib_send_bw on n1 exited with 1: Failed to modify QP to RTR",
        ),
    ],
)
def test_diagnosis_lines(kw, expected):
    assert diagnose.explain(tool="ib_send_bw", host="n1", **kw) == expected
