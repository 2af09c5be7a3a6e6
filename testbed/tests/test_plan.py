"""`ibqos testbed plan`: the run plan and the listing of the commands an admin would run."""

from __future__ import annotations

import json
import shlex

import pytest
from testbed_helpers import FIXTURES


def _plan(ibqos_cli, plan_file, out, *extra):
    return ibqos_cli("testbed", "plan", plan_file, "--server", "node1", "--client", "node2", "-o", out, *extra)


def _opt(argv, flag):
    return argv[argv.index(flag) + 1]


def test_run_plan_follows_the_seed_method(ibqos_cli, plan_file, tmp_path):
    r = _plan(ibqos_cli, plan_file, tmp_path / "rp", "--duration", "7", "--size", "8192")
    assert r.returncode == 0, r.stderr
    run = json.loads((tmp_path / "rp" / "runplan.json").read_text())
    assert run["schema"] == "ibqos.testbed-run/1"
    phases = {p["name"]: p for p in run["phases"]}
    sls = [0, 1, 2, 3]

    # Phase 1: one ib_send_bw pair per SL, all together, each on its own TCP port.
    bw = phases["bw"]["flows"]
    assert sorted(f["sl"] for f in bw) == sls
    assert len({f["tcp_port"] for f in bw}) == len(bw)
    for f in bw:
        srv, cli = f["server"]["argv"], f["client"]["argv"]
        assert srv[0] == cli[0] == "ib_send_bw"
        assert _opt(srv, "-S") == _opt(cli, "-S") == str(f["sl"])
        assert _opt(srv, "-p") == _opt(cli, "-p") == str(f["tcp_port"])
        assert _opt(cli, "-D") == "7" and _opt(cli, "-s") == "8192" and "-F" in cli
        assert _opt(cli, "-m") == "4096"  # the plan's MTU
        assert (f["server"]["host"], f["client"]["host"], cli[-1]) == ("node1", "node2", "node1")
        assert f["start_delay"] == 0

    # Then latency per SL, idle and under the load of the other SLs only.
    for sl in sls:
        (idle,) = phases[f"lat-idle-sl{sl}"]["flows"]
        assert idle["kind"] == "lat" and _opt(idle["client"]["argv"], "-S") == str(sl)
        argv = idle["client"]["argv"]
        assert argv[0] == "ib_send_lat" and "-n" in argv and "-D" not in argv
        assert _opt(argv, "-s") == "2" and "-F" in argv
        loaded = phases[f"lat-loaded-sl{sl}"]["flows"]
        assert sorted(f["sl"] for f in loaded if f["kind"] == "bw") == [s for s in sls if s != sl]
        (lat,) = [f for f in loaded if f["kind"] == "lat"]
        assert lat["sl"] == sl and 0 < lat["start_delay"] < 7
        assert len({f["tcp_port"] for f in loaded}) == len(loaded)


def test_listing_shows_exactly_the_commands_that_run(ibqos_cli, plan_file, tmp_path):
    r = _plan(ibqos_cli, plan_file, tmp_path / "rp")
    assert r.returncode == 0, r.stderr
    listing = (tmp_path / "rp" / "runplan.txt").read_text()
    assert r.stdout.startswith(listing)
    run = json.loads((tmp_path / "rp" / "runplan.json").read_text())
    commands = [
        ln.split("$ ", 1)[1].split(" &", 1)[0] for ln in listing.splitlines() if ln.startswith(("node1$ ", "node2$ "))
    ]
    expected = [shlex.join(f[role]["argv"]) for p in run["phases"] for role in ("server", "client") for f in p["flows"]]
    assert sorted(commands) == sorted(expected)
    for line in ("45.71 %", "27.36 %", "18.35 %", "8.57 %"):  # the analyzer's predictions
        assert line in listing


def test_plan_without_analysis_still_plans(ibqos_cli, make_plan, tmp_path):
    plan = make_plan(lambda d: d.update(analysis={}))
    r = _plan(ibqos_cli, plan, tmp_path / "rp")
    assert r.returncode == 0, r.stderr
    assert "(none)" in (tmp_path / "rp" / "runplan.txt").read_text()


def test_bad_plans_give_one_line_errors(ibqos_cli, make_plan, tmp_path):
    def dup_sl(d):
        d["classes"][1]["sls"] = [0]

    def bad_mtu(d):
        d["fabric"]["mtu"] = 9000

    def no_name(d):
        del d["classes"][0]["name"]

    cases = [(dup_sl, "classes.1.sls.0: SL 0 is in both class"), (bad_mtu, "fabric.mtu"), (no_name, "classes.0.name")]
    for edit, message in cases:
        plan = make_plan(edit)
        r = _plan(ibqos_cli, plan, tmp_path / "rp")
        assert r.returncode == 2, r.stderr
        assert message in r.stderr and str(plan) in r.stderr
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "rp" / "runplan.json").exists()

    broken = tmp_path / "broken.json"
    broken.write_text('{"schema": "ibqos.plan/1",\n "fabric": }')
    r = _plan(ibqos_cli, broken, tmp_path / "rp")
    assert r.returncode == 2 and f"{broken}:2: not JSON" in r.stderr


def test_missing_plan_file(ibqos_cli, tmp_path):
    r = _plan(ibqos_cli, tmp_path / "nope.json", tmp_path / "rp")
    assert r.returncode == 2 and "nope.json" in r.stderr and "Traceback" not in r.stderr


def test_class_with_two_sls_gets_a_flow_per_sl(ibqos_cli, make_plan, tmp_path):
    plan = make_plan(lambda d: d["classes"][3].update(sls=[3, 7]))
    r = _plan(ibqos_cli, plan, tmp_path / "rp")
    assert r.returncode == 0, r.stderr
    run = json.loads((tmp_path / "rp" / "runplan.json").read_text())
    bw = run["phases"][0]["flows"]
    assert [(f["sl"], f["class_name"]) for f in bw] == [
        (0, "latency"),
        (1, "storage"),
        (2, "bulk"),
        (3, "scavenger"),
        (7, "scavenger"),
    ]
    assert [p["name"] for p in run["phases"]].count("lat-loaded-sl7") == 1


def test_a_hand_edited_run_plan_whose_phase_leaves_the_results_is_refused_at_its_line(ibqos_cli, tmp_path):
    """Before, `testbed run` made results/../../escape and wrote the phase's recordings there."""
    doc = json.loads((FIXTURES / "results_configA" / "results.json").read_text())["runplan"]
    doc["phases"][1]["name"] = "../../escape"
    path = tmp_path / "r" / "runplan.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc, indent=2))
    line = next(n for n, ln in enumerate(path.read_text().splitlines(), 1) if "escape" in ln)
    r = ibqos_cli("testbed", "run", path)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"ibqos: error: {path}:{line}: phases.1.name: '../../escape' names"), r.stderr
    assert not (tmp_path / "escape").exists() and not (tmp_path / "r" / "results").exists()


@pytest.mark.parametrize(
    ("path", "spelling"),
    [
        (("phases", 0, "flows", 0, "sl"), '"3"'),
        (("settings", "duration"), "10.5"),
        (("phases", 0, "flows", 0, "tcp_port"), "true"),
    ],
    ids=["sl-as-text", "duration-as-float", "port-as-bool"],
)
def test_a_hand_edited_run_plan_with_a_number_of_another_json_type_is_refused_at_its_line(
    ibqos_cli, tmp_path, path, spelling
):
    """plan39: pydantic's lax mode ran perftest on SL "3" and for a duration of 10.5 s cut to
    10 (`testbed run` went on to ssh); now one line naming the file, line and field, exit 2."""
    doc = json.loads((FIXTURES / "results_configA" / "results.json").read_text())["runplan"]
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = 987654
    text = json.dumps(doc, indent=2)
    line = next(n for n, ln in enumerate(text.splitlines(), 1) if "987654" in ln)
    f = tmp_path / "r" / "runplan.json"
    f.parent.mkdir()
    f.write_text(text.replace("987654", spelling))
    r = ibqos_cli("testbed", "run", f)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"ibqos: error: {f}:{line}: {'.'.join(map(str, path))}: Input should be a valid "), (
        r.stderr
    )
    assert r.stderr.endswith(f"(got {spelling})\n") and not (tmp_path / "r" / "results").exists(), r.stderr


@pytest.mark.parametrize(("server", "addr"), [("admin@node1", "node1"), ("[fe80::1%ib0]", "fe80::1%ib0"), ("n1", "n1")])
def test_the_client_connects_to_the_servers_address_not_its_ssh_destination(
    ibqos_cli, plan_file, tmp_path, server, addr
):
    """Without --server-addr the client was given --server as it is: perftest's getaddrinfo
    resolves neither 'admin@node1' nor '[fe80::1%ib0]', so every flow would fail to connect."""
    r = ibqos_cli("testbed", "plan", plan_file, "--server", server, "--client", "c2", "-o", tmp_path / "rp")
    assert r.returncode == 0, r.stderr
    run = json.loads((tmp_path / "rp" / "runplan.json").read_text())
    assert run["settings"]["server_addr"] == addr
    flows = [f for p in run["phases"] for f in p["flows"]]
    assert {f["client"]["argv"][-1] for f in flows} == {addr}
    assert {f["server"]["host"] for f in flows} == {server}
