"""Issue 23, what an admin's fabric does to `ibqos monitor` while it runs: a link going down
and coming back between samples (ibsim's console Unlink / ReLink), and a signal during
`--listen` and during a sample (the read-back child and the HTTP server gone, the textfile
whole). Real OpenSM on the patched ibsim (per-SL counters)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from apply_helpers import as_from_a_terminal, child_env, make_plan_file
from ibqos.proc import pid_alive
from ibqos_sim.harness import sm_node_name
from ibqos_sim.harness.fabric import ibsim_node_id
from ibqos_sim.harness.ibsim_binary import patched_skip_reason
from ibqos_sim.harness.topology import fat_tree
from prometheus_client.parser import text_string_to_metric_families
from test_monitor_live import _free_port
from test_signals import _children

pytestmark = [
    pytest.mark.fabric,
    pytest.mark.skipif(patched_skip_reason() is not None, reason=str(patched_skip_reason())),
]


@contextmanager
def monitor_process(cmd: list[str]) -> Iterator[subprocess.Popen]:
    """The monitor run as `cmd`, its stderr piped; killed (by PID) if the block leaves it running."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=child_env())
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture
def fabric(tmp_path, ibsim_fabric):
    _, plan = make_plan_file(tmp_path, "a", 40)
    net = fat_tree(1, 0, 3).write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run", ibsim="patched", console=True) as h:
        h.start_sm(engine="minhop")
        yield h, plan


def once(ibqos_cli, h, plan, state):
    cmd = [*ibqos_cli.argv, "monitor", "--plan", str(plan), "--sim-socket", h.sock, "--once", "--json"]
    cmd += ["--interval", "0.2", "--state", str(state)]
    cp = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=child_env())
    assert cp.returncode in (0, 1) and cp.stdout, cp.stderr
    return cp.returncode, json.loads(cp.stdout)


def _numbers(doc):
    for link in doc["links"]:
        yield link["utilisation"] or 0
        for c in link["classes"]:
            yield from (c["bytes"], c["share_pct"] or 0, c["gbps"])  # None: the port sent nothing


def test_a_link_down_then_up_between_samples_is_no_finding_and_measured_again(ibqos_cli, fabric, tmp_path):
    h, plan = fabric
    model = h.read_back(save=False)
    ca = next(n for n in model.nodes.values() if n.kind == "ca" and n.desc != sm_node_name(h.netfile))
    sw_guid, sw_port = ca.ports[1].remote
    ends = {f"{ca.desc}[1]", f"{model.nodes[sw_guid].desc}[{sw_port}]"}
    state = tmp_path / "state.json"
    rc, first = once(ibqos_cli, h, plan, state)
    assert rc == 0, first["findings"]

    h.unlink(ca.desc, 1)
    rc, down = once(ibqos_cli, h, plan, state)
    assert rc == 0, down["findings"]
    assert not ends & {f"{ln['node']}[{ln['port']}]" for ln in down["links"]}
    assert all(x >= 0 for x in _numbers(down)) and down["without_baseline"] == []

    h.relink(ca.desc, 1)
    rc, up = once(ibqos_cli, h, plan, state)
    # counted now, not at the sample before: measured from the next one, not "no counters"
    assert rc == 0, up["findings"]
    assert set(up["without_baseline"]) == ends
    rc, again = once(ibqos_cli, h, plan, state)
    assert rc == 0 and again["without_baseline"] == []
    assert ends <= {f"{ln['node']}[{ln['port']}]" for ln in again["links"]}
    assert all(x >= 0 for x in _numbers(again))


def test_a_saved_sample_from_a_clock_ahead_is_no_negative_interval(ibqos_cli, fabric, tmp_path):
    """The state's sample is newer than now (the clock was stepped back, or it was copied from
    a host whose clock is ahead): the monitor measures from now on, never a negative interval."""
    h, plan = fabric
    state = tmp_path / "state.json"
    once(ibqos_cli, h, plan, state)
    doc = json.loads(state.read_text())
    doc["time"] += 3600
    state.write_text(json.dumps(doc))
    cmd = [*ibqos_cli.argv, "monitor", "--plan", str(plan), "--sim-socket", h.sock, "--once", "--json"]
    cp = subprocess.run(
        [*cmd, "--interval", "0.2", "--state", str(state)], capture_output=True, text=True, timeout=120, env=child_env()
    )
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert "measuring from now" in cp.stderr
    assert 0 < json.loads(cp.stdout)["interval_s"] < 60
    assert json.loads(state.read_text())["time"] < doc["time"]


def test_cron_runs_into_one_textfile_export_counters_not_each_runs_interval(ibqos_cli, fabric, tmp_path):
    """`--once --state --textfile` from cron, read by node_exporter: each run started its
    counters at 0, so the textfile's `_total`s were the last interval's (rate() of them garbage:
    a run that counted more than the one before added only the difference) and
    ibqos_monitor_samples_total stayed 1, which fires IbqosMonitorDown while cron runs. They go
    on from the totals kept in --state."""
    h, plan = fabric
    state, prom = tmp_path / "state.json", tmp_path / "ibqos.prom"
    seen: list[dict[tuple[str, tuple], float]] = []
    for _ in range(3):
        cmd = [*ibqos_cli.argv, "monitor", "--plan", str(plan), "--sim-socket", h.sock, "--once", "--json"]
        cmd += ["--interval", "0.2", "--state", str(state), "--textfile", str(prom)]
        cp = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=child_env())
        assert cp.returncode == 0, cp.stdout + cp.stderr
        families = list(text_string_to_metric_families(prom.read_text()))
        seen.append({(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples})
    assert [run[("ibqos_monitor_samples_total", ())] for run in seen] == [1, 2, 3]
    ports = [{k: v for k, v in run.items() if k[0] == "ibqos_port_bytes_total"} for run in seen]
    assert ports[0] and ports[0].keys() == ports[1].keys() == ports[2].keys()
    # ibsim counts the read-back's own MADs: every port sends in every interval, so each total grows
    assert all(ports[0][k] < ports[1][k] < ports[2][k] for k in ports[0]), ports


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
@pytest.mark.parametrize("when", ["listening", "sampling"])
def test_a_signal_stops_the_monitor_whole(ibqos_cli, fabric, tmp_path, sig, when):
    h, plan = fabric
    out = tmp_path / "prom"
    out.mkdir()
    textfile, port = out / "ibqos.prom", _free_port()
    cmd = [
        *ibqos_cli.argv,
        "monitor",
        "--plan",
        str(plan),
        "--sim-socket",
        h.sock,
        "--json",
        "--textfile",
        str(textfile),
    ]
    cmd += ["--listen", f"127.0.0.1:{port}", "--interval", "0.1" if when == "sampling" else "5"]
    reader = None
    with monitor_process(as_from_a_terminal(cmd)) as proc:
        deadline = time.monotonic() + 60
        while not textfile.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.02)
        if when == "sampling":  # while the read-back child runs
            while not (kids := _children(proc.pid)):
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.001)
            reader = kids[0]
        proc.send_signal(sig)
        rc = proc.wait(timeout=30)
    err = proc.stderr.read() if proc.stderr else ""
    assert rc == 128 + sig and f"ibqos: interrupted by {signal.Signals(sig).name}" in err, (rc, err)
    assert "Traceback" not in err
    assert reader is None or not pid_alive(reader), "the read-back child outlived the monitor"
    assert not pid_alive(proc.pid)
    with socket.socket() as s:  # the exposition's port is free again
        s.bind(("127.0.0.1", port))
    assert os.listdir(out) == ["ibqos.prom"], "a temp file was left"
    names = {s.name for f in text_string_to_metric_families(textfile.read_text()) for s in f.samples}
    assert "ibqos_monitor_samples_total" in names


def test_once_without_json_prints_the_table_and_the_findings_exit_code(ibqos_cli, fabric, tmp_path):
    """From cron without --json: the rich table on stdout (no live display, no terminal), the
    findings as its caption, the exit code as with --json."""
    h, plan = fabric
    cmd = [*ibqos_cli.argv, "monitor", "--plan", str(plan), "--sim-socket", h.sock, "--once", "--interval", "0.2"]
    cp = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=child_env())
    assert cp.returncode == 0 and cp.stderr == "", cp.stderr
    assert "ibqos monitor:" in cp.stdout and "link directions" in cp.stdout, cp.stdout
    assert "\x1b[" not in cp.stdout  # no escape codes into a pipe or a mail


def test_this_hosts_port_going_down_is_exit_3_not_an_all_clear(ibqos_cli, fabric, tmp_path):
    """The port the monitor reads through unlinked (unplugged, its switch off): the reader saw
    its own node alone, and the monitor judged an interval of no links: `"ok": true`, exit 0.
    Now it is the fabric not answering, one line, exit 3, as when there is no fabric at all."""
    h, plan = fabric
    h.command(f'Unlink "{ibsim_node_id(h.netfile, sm_node_name(h.netfile))}"[1]')  # no re-sweep: the SM's own port
    cmd = [*ibqos_cli.argv, "monitor", "--plan", str(plan), "--sim-socket", h.sock, "--once", "--json"]
    cp = subprocess.run(cmd + ["--interval", "0.2"], capture_output=True, text=True, timeout=120, env=child_env())
    assert cp.returncode == 3, cp.stdout + cp.stderr
    assert (
        cp.stderr
        == "ibqos: error: live read-back: no link up behind this host's port: it is down, no fabric to sample\n"
    )
    assert cp.stdout == ""


def test_a_state_that_is_a_dangling_link_is_written_where_it_points(ibqos_cli, fabric, tmp_path):
    """Config management links /var/lib/ibqos/monitor.json to a file not made yet (relative,
    into another directory): the monitor writes the state where the link points, as every ibqos
    output (docfile.write_atomic), and leaves the link; the next run reads it through the link
    and goes on from it. Not a plain file in the link's place, which the next deploy would
    replace again and lose the totals with."""
    h, plan = fabric
    (tmp_path / "lib").mkdir()
    link = tmp_path / "monitor.json"
    link.symlink_to("lib/monitor.json")
    once(ibqos_cli, h, plan, link)
    once(ibqos_cli, h, plan, link)
    assert link.is_symlink() and os.readlink(link) == "lib/monitor.json"
    doc = json.loads((tmp_path / "lib" / "monitor.json").read_text())
    assert doc["monitor_totals"]["samples"] == 2  # the second run went on from the first
    assert sorted(os.listdir(tmp_path / "lib")) == ["monitor.json"]
