"""Bad input to every command is one line naming the file (exit 2), never a traceback, an
internal message or a half-written output; a cut dump is bad input, not a fabric defect
(issue 15, defects 7 and 8). Runs the console script, as an admin would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from ibqos.paths import REPO_ROOT
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from ibqos_sim.harness.topology import dragonfly, fat_tree
from tree_snapshot import changes, snapshot

EXAMPLES = REPO_ROOT / "examples"
RESULTS = REPO_ROOT / "testbed" / "tests" / "fixtures" / "results_configA"
NOT_UTF8 = b"fabric:\n  rate: EDR\xff\xfe\n"  # byte 19 is the 0xff


def one_error_line(r, code=2) -> str:
    assert r.returncode == code, (r.returncode, r.stdout[-500:], r.stderr[-1500:])
    assert "Traceback" not in r.stderr + r.stdout
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("ibqos: error:")]
    assert len(lines) == 1, r.stderr
    return lines[0]


@pytest.fixture
def bad(tmp_path) -> Path:
    p = tmp_path / "bad.bin"
    p.write_bytes(NOT_UTF8)
    return p


@pytest.fixture
def rundir(tmp_path) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    dragonfly(2, 1, 1).to_fabric().save(d / "fabric.json")
    return d


COMMANDS = {
    "plan": lambda b, d, t: ["plan", b, "-o", t / "p.json"],
    "analyze": lambda b, d, t: ["analyze", b],
    "render": lambda b, d, t: ["render", b, "-o", t / "out"],
    "testbed plan": lambda b, d, t: ["testbed", "plan", b, "--server", "a", "--client", "b", "-o", t / "tb"],
    "testbed run": lambda b, d, t: ["testbed", "run", b, "-o", t / "res"],
    "testbed report": lambda b, d, t: ["testbed", "report", RESULTS, "--prediction", b],
    "status --plan": lambda b, d, t: ["status", "--plan", b, d],
    "dryrun --net": lambda b, d, t: ["dryrun", EXAMPLES / "two-class.yaml", "--net", b, "--out", t / "dr"],
    "simulate --classes": lambda b, d, t: ["simulate", d, "--traffic", "mix", "--classes", b],
}


@pytest.mark.parametrize("cmd", sorted(COMMANDS))
def test_non_utf8_input_is_one_line_naming_the_file_and_byte(ibqos_cli, cmd, bad, rundir, tmp_path):
    line = one_error_line(ibqos_cli(*COMMANDS[cmd](bad, rundir, tmp_path)))
    assert f"{bad}:2: not UTF-8 (byte 19)" in line, line
    for out in ("p.json", "out", "tb", "res", "dr"):
        assert not (tmp_path / out).exists(), out  # nothing half-written


def _dumps(tmp_path) -> Path:
    """A real OpenSM dump directory: the one the dry run of a tiny fabric leaves."""
    from ibqos_sim.harness import Harness

    net = fat_tree(leaves=2, spines=1, hosts=2).write_net(tmp_path / "f.net")
    with Harness(net, run_dir=tmp_path / "h") as h:
        run = h.run_sm(engine="minhop", conf={"qos": "TRUE"})
    return run.dumps


@pytest.mark.fabric
def test_cut_lft_dumps_are_bad_input_not_a_fabric_defect(ibqos_cli, tmp_path):
    dumps = _dumps(tmp_path)
    whole = (dumps / "opensm-lfts.dump").read_text()
    assert ibqos_cli("verify", dumps).returncode == 0
    blocks = whole.split("lids dumped\n")
    cuts = {
        "mid-line": whole[: len(whole) // 2 + 7],
        "after a block": blocks[0] + "lids dumped\n",
        "last trailer lost": whole[: whole.rindex("lids dumped")].rsplit("\n", 2)[0] + "\n",
    }
    for what, text in cuts.items():
        d = tmp_path / what.replace(" ", "-")
        d.mkdir()
        for f in dumps.iterdir():
            (d / f.name).write_bytes(f.read_bytes())
        (d / "opensm-lfts.dump").write_text(text)
        line = one_error_line(ibqos_cli("verify", d))
        assert "opensm-lfts.dump:" in line and ("cut" in line or "not an OpenSM" in line), (what, line)


def test_non_finite_numbers_are_refused(ibqos_cli, tmp_path):
    doc = yaml.safe_load((EXAMPLES / "two-class.yaml").read_text())
    doc["classes"][0]["max_latency_us"] = "INF"
    text = yaml.safe_dump(doc).replace("max_latency_us: INF", "max_latency_us: 1e400")
    (tmp_path / "p.yaml").write_text(text)
    line = one_error_line(ibqos_cli("plan", tmp_path / "p.yaml", "-o", tmp_path / "p.json"))
    assert "max_latency_us" in line and "finite" in line
    assert not (tmp_path / "p.json").exists()
    # a plan document with Infinity in it is not JSON
    ok = tmp_path / "ok.json"
    assert ibqos_cli("plan", EXAMPLES / "two-class.yaml", "-o", ok).returncode == 0
    doc = json.loads(ok.read_text())
    doc["classes"][0]["latency"]["max_latency_us"] = float("inf")
    (tmp_path / "inf.json").write_text(json.dumps(doc))
    line = one_error_line(ibqos_cli("analyze", tmp_path / "inf.json"))
    assert "inf.json" in line and "Infinity" in line


@pytest.mark.parametrize("args", [["--high", ""], ["--high", "0:0", "--low", ""]])
def test_analyze_refuses_tables_that_send_nothing(ibqos_cli, args):
    line = one_error_line(ibqos_cli("analyze", *args))
    assert "no entry with a weight above 0" in line


@pytest.mark.parametrize(
    "spec, says",
    [
        ("dragonfly:a=4,p=2", "give h="),
        ("dragonfly:a=4,p=2,h=2,q=1", "unknown parameter 'q'"),
        ("fattree:leaves=0", "leaves >= 1"),
        ("dfplus:l=4,s=4,p=4", "give h="),
        ("dfplus:l=4,s=4,p=4,h=2,g=10", "2 <= g <= s*h+1"),
    ],
)
def test_dryrun_bad_topology_writes_nothing_and_leaks_nothing(ibqos_cli, tmp_path, spec, says):
    out = tmp_path / "dr"
    line = one_error_line(ibqos_cli("dryrun", EXAMPLES / "two-class.yaml", "--topology", spec, "--out", out))
    assert says in line and "positional argument" not in line
    assert not out.exists()


def test_dryrun_bad_net_file_is_named_with_its_line(ibqos_cli, tmp_path):
    net = tmp_path / "bad.net"
    net.write_text('Switch 4 "s"\n[1] "c"[1]\n')
    out = tmp_path / "dr"
    line = one_error_line(ibqos_cli("dryrun", EXAMPLES / "two-class.yaml", "--net", net, "--out", out))
    assert f"{net}:2:" in line and "'c'" in line and "ibpanic" not in line
    assert not out.exists()


def _sm_command(tmp_path: Path, cmd: str) -> tuple[Path, Path, list]:
    """An /etc/opensm with a one-line opensm.conf, and the arguments of `cmd` (apply, rollback
    or status) up to the options naming the OpenSM: (etc, conf, args)."""
    etc = tmp_path / "etc"
    etc.mkdir()
    conf = etc / "opensm.conf"
    conf.write_text("event_plugin_name ibqos\n")
    plan = tmp_path / "p.json"
    make_plan(load_policy(EXAMPLES / "two-class.yaml")).save(plan)
    return etc, conf, {"apply": ["apply", plan], "rollback": ["rollback", "v1"], "status": ["status"]}[cmd]


@pytest.mark.parametrize("pid", ["0", "-1"])
@pytest.mark.parametrize("cmd", ["apply", "rollback", "status"])
def test_a_pid_of_zero_or_below_is_unusable_input(ibqos_cli, tmp_path, cmd, pid):
    """--pid 0 or below names no process (kill(2) would signal a process group): before,
    `no process 0: is OpenSM running?`, exit 3, as if the SM had gone; now one line naming
    the option, exit 2, nothing written."""
    etc, conf, args = _sm_command(tmp_path, cmd)
    before = snapshot(etc)
    line = one_error_line(ibqos_cli(*args, "--opensm-conf", conf, "--pid", pid))
    assert line == f"ibqos: error: --pid: {pid} is not a process ID: give the running OpenSM's (above 0)", line
    assert changes(before, snapshot(etc)) == []


@pytest.mark.parametrize("seconds", ["nan", "0", "-5", "inf"])
@pytest.mark.parametrize("cmd", ["apply", "rollback", "status"])
def test_a_sweep_timeout_that_is_no_number_of_seconds_is_unusable_input(ibqos_cli, tmp_path, cmd, seconds):
    """redsm: --timeout went to the sweep waits as click's float took it: `nan` gives a wait
    whose deadline never comes (proc.wait_until: monotonic() > nan is never true), so a sweep
    that never ends was waited for with the lock held; -5, 0 and inf were taken as well. Now
    one line naming the option, exit 2, nothing written."""
    etc, conf, args = _sm_command(tmp_path, cmd)
    before = snapshot(etc)
    line = one_error_line(ibqos_cli(*args, "--opensm-conf", conf, "--timeout", seconds))
    assert line == f"ibqos: error: --timeout: {seconds} is not a number of seconds from above 0 to 86400", line
    assert changes(before, snapshot(etc)) == []
