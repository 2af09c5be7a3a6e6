"""Issue 23, an admin's bad input to `ibqos monitor`: one line `ibqos: error: …` naming the
file or the option, exit 2 (3 when the fabric is not there, as `ibqos status --live`), before
the first sample, no traceback, nothing written."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from apply_helpers import child_env, make_plan_file

NO_FABRIC = ["--sim-socket", "ibqos-test-no-such-ibsim"]  # any sample fails with exit 3


def run(ibqos_cli, *args, user=None):
    cmd = [*ibqos_cli.argv, "monitor", *map(str, args)]
    if user is not None:
        cmd = [shutil.which("setpriv") or "setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=child_env())


def one_line(cp, code, *words):
    assert cp.returncode == code, cp.stdout + cp.stderr
    assert cp.stderr.count("\n") == 1 and cp.stderr.startswith("ibqos: error: "), cp.stderr
    assert "Traceback" not in cp.stderr
    for w in words:
        assert w in cp.stderr, (w, cp.stderr)


@pytest.fixture
def plan(tmp_path):
    return make_plan_file(tmp_path, "a", 40)[1]


def test_a_listen_port_in_use_is_named_before_sampling(ibqos_cli, plan):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        cp = run(ibqos_cli, "--plan", plan, "--listen", f"127.0.0.1:{port}", *NO_FABRIC)
    one_line(cp, 2, f"--listen: 127.0.0.1:{port}: Address already in use")


@pytest.mark.parametrize(
    ("addr", "reason"),
    [
        ("no-such-host.invalid:9687", "--listen: no-such-host.invalid:9687: "),
        ("192.0.2.1:9687", "--listen: 192.0.2.1:9687: Cannot assign requested address"),  # not this host's
        ("127.0.0.1:70000", "--listen: '127.0.0.1:70000': give ADDR:PORT"),
        ("9687", "--listen: '9687': give ADDR:PORT"),
        # hostile36: a digit str.isdigit takes and int() refuses was an internal error, exit 70
        ("127.0.0.1:\u00b2", "--listen: '127.0.0.1:\u00b2': give ADDR:PORT"),
    ],
)
def test_a_listen_address_that_cannot_be_bound_is_one_line(ibqos_cli, plan, addr, reason):
    one_line(run(ibqos_cli, "--plan", plan, "--listen", addr, *NO_FABRIC), 2, reason)


def test_a_privileged_port_without_the_right_is_one_line(ibqos_cli):
    """As nobody (uid 65534), in a directory it may read: binding port 81 is refused."""
    import tempfile

    if shutil.which("setpriv") is None:
        pytest.fail("setpriv not found (util-linux)")
    with tempfile.TemporaryDirectory() as d:
        Path(d).chmod(0o755)
        _, plan = make_plan_file(Path(d), "a", 40)
        plan.chmod(0o644)
        cp = run(ibqos_cli, "--plan", plan, "--listen", "127.0.0.1:81", *NO_FABRIC, user=65534)
    one_line(cp, 2, "--listen: 127.0.0.1:81: Permission denied")


@pytest.mark.parametrize("option", ["--textfile", "--state"])
def test_an_output_file_in_no_directory_is_said_before_sampling(ibqos_cli, plan, tmp_path, option):
    cp = run(ibqos_cli, "--plan", plan, "--once", "--json", option, tmp_path / "no-dir" / "ibqos.prom", *NO_FABRIC)
    one_line(cp, 2, f"{option}: ", "no directory")
    (tmp_path / "a-file").write_text("")
    cp = run(ibqos_cli, "--plan", plan, "--once", "--json", option, tmp_path / "a-file" / "ibqos.prom", *NO_FABRIC)
    one_line(cp, 2, f"{option}: ", "no directory")


@pytest.mark.parametrize("option", ["--textfile", "--state"])
def test_an_output_link_into_no_directory_is_said_before_sampling(ibqos_cli, plan, tmp_path, option):
    """write_atomic writes the file a link names: a dangling link into no directory passed
    the check (its own directory is there) and failed only after the first interval."""
    link = tmp_path / "ibqos.prom"
    link.symlink_to(tmp_path / "gone" / "ibqos.prom")
    cp = run(ibqos_cli, "--plan", plan, "--once", "--json", option, link, *NO_FABRIC)
    one_line(cp, 2, f"{option}: {link} (a link to {tmp_path / 'gone' / 'ibqos.prom'}): no directory")


@pytest.mark.parametrize("option", ["--textfile", "--state"])
def test_an_output_link_that_is_a_loop_is_said_before_sampling(ibqos_cli, plan, tmp_path, option):
    """A link leading back to itself names no file to write through to (a dangling one's is
    made, as every ibqos output's: write_atomic): the link was replaced by a plain file after
    the first interval; it is one line, exit 2, before the first sample, the link left as it is."""
    link, other = tmp_path / "ibqos.prom", tmp_path / "other.prom"
    link.symlink_to(other)
    other.symlink_to(link)
    cp = run(ibqos_cli, "--plan", plan, "--once", "--json", option, link, *NO_FABRIC)
    one_line(cp, 2, f"{option}: {link}: a link that names no file: Too many levels of symbolic links")
    assert link.is_symlink() and other.is_symlink()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--once", "--listen", "127.0.0.1:9687"], ["--listen: ", "--textfile"]),
        (["--once", "--count", "3"], ["--count: "]),
        (["--interval", "0"], ["'--interval'"]),
        (["--interval", "-5"], ["'--interval'"]),
    ],
)
def test_options_that_contradict_are_one_line(ibqos_cli, plan, args, words):
    one_line(run(ibqos_cli, "--plan", plan, *args, *NO_FABRIC), 2, *words)


def test_a_textfile_node_exporter_would_not_read_is_said(ibqos_cli, plan, tmp_path):
    cp = run(ibqos_cli, "--plan", plan, "--once", "--json", "--textfile", tmp_path / "ibqos.txt", *NO_FABRIC)
    one_line(cp, 2, "--textfile: ", "*.prom")


def test_an_opensm_conf_that_is_not_there_is_said_so(ibqos_cli, tmp_path):
    one_line(
        run(ibqos_cli, "--opensm-conf", tmp_path / "opensm.conf", "--once", *NO_FABRIC),
        2,
        "opensm.conf: ",
        "no such file",
    )


@pytest.mark.parametrize(
    ("mangle", "words"),
    [
        (lambda t: t[: len(t) // 2], [":", "not JSON"]),
        (lambda t: '{"schema": "ibqos.fabric/1"}', ["not an ibqos plan"]),
    ],
)
def test_a_hostile_plan_is_one_line(ibqos_cli, plan, mangle, words):
    plan.write_text(mangle(plan.read_text()))
    one_line(run(ibqos_cli, "--plan", plan, "--once", *NO_FABRIC), 2, str(plan.name), *words)


def test_a_truncated_state_file_names_file_and_line(ibqos_cli, plan, tmp_path):
    state = tmp_path / "state.json"
    state.write_text('{"schema": "ibqos.counters/1",\n "time": 1.0,\n "ports": [{"guid": ')
    one_line(run(ibqos_cli, "--plan", plan, "--once", "--json", "--state", state, *NO_FABRIC), 2, f"{state}:3: ")


@pytest.mark.parametrize(
    ("field", "spelling"),
    [("port", "1.9"), ("lid", '"3"'), ("xmit_data", "true"), ("xmit_data_sl.0", "true")],
    ids=["port-as-float", "lid-as-text", "counter-as-bool", "sl-counter-as-bool"],
)
def test_a_hand_edited_state_file_with_a_number_of_another_json_type_is_one_line(
    ibqos_cli, plan, tmp_path, field, spelling
):
    """plan39: the --state sample was read with int(): a port 1.9 was port 1, a LID "3" LID 3,
    and a counter `true` (bool is an int) a count of 1, exit 3 (it went on to sample); now the
    file, line and field, exit 2, before sampling."""
    port = {"guid": "0x0000000000001001", "port": 1, "lid": 3, "xmit_data_sl": [0] * 16, "xmit_data": 0}
    key, _, index = field.partition(".")
    if index:
        port[key][int(index)] = 987654
    else:
        port[key] = 987654
    text = json.dumps({"schema": "ibqos.counters/1", "time": 1.0, "ports": [{**port, "errors": {}}]}, indent=1)
    line = next(n for n, ln in enumerate(text.splitlines(), 1) if "987654" in ln)
    state = tmp_path / "state.json"
    state.write_text(text.replace("987654", spelling))
    cp = run(ibqos_cli, "--plan", plan, "--once", "--json", "--state", state, *NO_FABRIC)
    one_line(cp, 2, f"{state}:{line}: ports.0.{field}: Input should be a valid integer (got {spelling})")


def test_no_fabric_is_one_line_and_exit_3_as_status(ibqos_cli, plan, tmp_path):
    textfile = tmp_path / "ibqos.prom"
    cp = run(ibqos_cli, "--plan", plan, "--once", "--json", "--textfile", textfile, *NO_FABRIC)
    one_line(cp, 3, "live read-back failed")
    assert not textfile.exists() and not list(tmp_path.glob(".ibqos.prom*")), "nothing written"


def test_a_verdict_file_that_is_not_one_is_named_before_sampling(ibqos_cli, plan, tmp_path):
    bad = tmp_path / "verdict.json"
    bad.write_text('{"schema": "ibqos.verdict/1", "read_at": 1.0,\n "source": "live", "engine": "dla"}\n')
    cp = run(ibqos_cli, "--plan", plan, "--once", "--verdict", bad, *NO_FABRIC)
    one_line(cp, 2, f"{bad}:", "credit_loop")


@pytest.mark.parametrize(
    ("read_at", "credit_loop", "where"),
    [("1.0", '"yes"', ":4: credit_loop: "), ("-5", "false", ":3: read_at: ")],
    ids=["quoted-bool", "negative-time"],
)
def test_a_hand_edited_verdict_is_one_line_and_exit_2_before_sampling(
    ibqos_cli, plan, tmp_path, read_at, credit_loop, where
):
    bad = tmp_path / "verdict.json"
    bad.write_text(
        '{"schema": "ibqos.verdict/1",\n "source": "live", "engine": "dla",\n'
        f' "read_at": {read_at},\n "credit_loop": {credit_loop}}}\n'
    )
    cp = run(ibqos_cli, "--plan", plan, "--once", "--verdict", bad, *NO_FABRIC)
    one_line(cp, 2, f"{bad}{where}")


@pytest.mark.parametrize(
    "state, words",
    [
        ('{"schema": "ibqos.counters/1", "time": NaN, "ports": []}', "NaN is not a number JSON allows"),
        (
            '{"schema": "ibqos.counters/1", "time": "nan", "ports": []}',
            ':1: time: Input should be a valid number (got "nan")',
        ),
        ('{"schema": "ibqos.counters/1", "time": 1e400, "ports": []}', "1e400 is too large"),
        ('{"schema": "ibqos.counters/1", "time": 1.0, "ports": [{"guid": "0x1", "port": 1e400}]}', "too large"),
        (
            '{"schema": "ibqos.counters/1", "time": 1.0, "ports": [], "monitor_totals": {"samples": -1}}',
            ":1: monitor_totals.samples: not the monitor's totals: -1 is not a count",
        ),
        (
            # hand-edited, or another tool's: a VL no port has was kept, and exported for good
            '{"schema": "ibqos.counters/1", "time": 1.0, "ports": [],\n "monitor_totals": {"samples": 1,\n'
            '  "port_bytes": [], "class_bytes": [],\n  "vl_xmit_wait": [["0x20", 1, 15, 7],\n'
            '   ["0x20", 1, 16, 7]]}}',
            ":5: monitor_totals.vl_xmit_wait.1: not the monitor's totals: VL 16: a port has VLs 0-15",
        ),
        (
            '{"schema": "ibqos.counters/1", "time": 1.0, "ports": [], "monitor_totals": {"samples": 1,'
            ' "port_bytes": [["0x20", 1]], "class_bytes": [], "vl_xmit_wait": []}}',
            ":1: monitor_totals.port_bytes.0: not the monitor's totals: ",
        ),
    ],
    ids=["time-NaN", "time-nan-text", "time-1e400", "port-1e400", "totals-negative", "totals-vl-16", "totals-short"],
)
def test_a_state_file_with_no_time_or_port_is_named_before_sampling(ibqos_cli, plan, tmp_path, state, words):
    """redfiles: the state file was read with json.loads, which takes NaN and Infinity: a
    saved time of NaN or "nan" was taken (every interval from it nan), a port of 1e400 was an
    internal error (OverflowError, exit 70). Read as every JSON document is (docfile)."""
    path = tmp_path / "state.json"
    path.write_text(state + "\n")
    one_line(run(ibqos_cli, "--plan", plan, "--once", "--json", "--state", path, *NO_FABRIC), 2, f"{path}", words)


def test_listen_with_no_fabric_serves_the_failure_until_stopped(ibqos_cli, plan, tmp_path):
    """An exporter started before its fabric (ibsim not up, the HCA's port down at boot): it
    ended with exit 3 at its first sample, so a unit with Restart= looped; it serves
    `ibqos_monitor_last_sample_success 0` and the failures, says so once, and stops on SIGTERM
    (by PID) as always. Its textfile says the same."""
    import signal
    import time
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families
    from test_monitor_faults import monitor_process
    from test_monitor_live import _free_port

    port, textfile = _free_port(), tmp_path / "ibqos.prom"
    cmd = [*ibqos_cli.argv, "monitor", "--plan", str(plan), "--json", "--listen", f"127.0.0.1:{port}"]
    cmd += ["--interval", "0.1", "--textfile", str(textfile), *NO_FABRIC]
    with monitor_process(cmd) as proc:
        got: dict[str, float] = {}
        deadline = time.monotonic() + 30
        while got.get("ibqos_monitor_sample_failures_total", 0) < 5:
            assert proc.poll() is None and time.monotonic() < deadline, got
            time.sleep(0.1)
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                    text = r.read().decode()
            except OSError:
                continue
            got = {s.name: s.value for f in text_string_to_metric_families(text) for s in f.samples}
        assert got["ibqos_monitor_last_sample_success"] == 0 and got["ibqos_monitor_samples_total"] == 0
        assert "ibqos_monitor_last_sample_timestamp_seconds" not in got and "ibqos_monitor_unmeasured_ports" not in got
        prom = {s.name: s.value for f in text_string_to_metric_families(textfile.read_text()) for s in f.samples}
        assert prom["ibqos_monitor_last_sample_success"] == 0 and prom["ibqos_monitor_sample_failures_total"] >= 1
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=30)
    err = proc.stderr.read() if proc.stderr else ""
    assert rc == 128 + signal.SIGTERM, err
    lines = [ln for ln in err.splitlines() if ln]
    assert len(lines) == 2 and lines[0].startswith("ibqos: sampling failed: live read-back failed"), err
    assert lines[1] == "ibqos: interrupted by SIGTERM", err


def test_listen_with_count_ending_on_a_failed_sample_is_exit_3(ibqos_cli, plan):
    """--count ends through an outage (a failed sample is an interval): exit 3, the fabric did
    not answer, after the one line that said it started failing."""
    from test_monitor_live import _free_port

    cp = run(ibqos_cli, "--plan", plan, "--json", "--listen", f"127.0.0.1:{_free_port()}", "--count", "3",
             "--interval", "0.1", *NO_FABRIC)  # fmt: skip
    assert cp.returncode == 3 and cp.stdout == "", cp.stdout + cp.stderr
    lines = cp.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("ibqos: sampling failed: live read-back failed"), cp.stderr
    assert lines[1].startswith("ibqos: error: live read-back failed"), cp.stderr
