"""The end-to-end bound per class (issue 14, item 4): computed on a case checked by hand, shown
by `ibqos plan` and `ibqos analyze`, and an unreachable `max_e2e_latency_us` refused with
fixes that plan."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from ibqos.paths import REPO_ROOT
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from test_planner_fixes import _apply, offered_fixes

EXAMPLES = REPO_ROOT / "examples"
EDR_BYTES_PER_US = 100e9 / 8 / 1e6  # 100 Gb/s


def test_config_a_on_one_switch_matches_the_hand_computation(ibqos_cli, tmp_path):
    """Seed 002 config A on one switch: a packet crosses the CA's port and the switch's port
    facing the destination. The low class sl3 has one low entry of weight 6 and VLHighLimit 0,
    so the arbiter alternates one high packet with one low turn; the entry earns 6*64 = 384
    bytes a turn and a 4096-byte packet leaves its deficit in (-4096, -3712], so the next
    packet needs at most ceil(4096/384) = 11 turns: 11 high packets of 4096 bytes between two
    sl3 packets, at each of the two ports."""
    plan_file = tmp_path / "plan.json"
    r = ibqos_cli("plan", EXAMPLES / "seed002-config-a.yaml", "-o", plan_file)
    assert r.returncode == 0, r.stderr
    plan = json.loads(plan_file.read_text())
    for role in ("ca", "terminal"):  # the tables the hand computation reads
        t = plan["vlarb"][role]
        assert t["low"] == [[3, 6]] and t["high_limit"] == 0
        assert {vl for vl, _ in t["high"]} == {0, 1, 2}
    turns = math.ceil(4096 / (6 * 64))
    assert turns == 11
    wait_us = turns * 4096 / EDR_BYTES_PER_US  # per port: 3.60448 µs
    serialization_us = 4096 / EDR_BYTES_PER_US  # per link
    wire_us = 2 * 5 / 1000  # 2 m of cable at 5 ns/m, per link
    switch_us = 100 / 1000
    want = 2 * wait_us + 2 * (serialization_us + wire_us) + 1 * switch_us
    assert want == pytest.approx(7.98432)

    e2e = plan["end_to_end"]
    assert e2e["switch_hops"] == 0  # the example's fabric.max_switch_hops
    sl3 = e2e["per_class"]["sl3"]
    assert sl3["ports"] == ["ca", "terminal"]
    assert sl3["bound_us"] == pytest.approx(want, abs=1e-6)
    assert sl3["wait_us"] == pytest.approx(2 * wait_us, abs=1e-6)
    # `ibqos plan` prints it, `ibqos analyze` recomputes it from its own analysis of the tables
    assert "sl3: 7.98 µs" in r.stdout and "ca → terminal (0 switch hops)" in r.stdout
    a = ibqos_cli("analyze", plan_file, "--json")
    assert a.returncode == 0, a.stderr
    assert json.loads(a.stdout)["end_to_end"]["per_class"]["sl3"]["bound_us"] == pytest.approx(want, abs=1e-6)
    table = ibqos_cli("analyze", plan_file)
    assert "end to end per packet" in table.stdout and "7.984" in table.stdout
    # the planner in this process too (the commands above ran in children)
    inproc = make_plan(load_policy(EXAMPLES / "seed002-config-a.yaml")).end_to_end
    assert inproc is not None and inproc.switch_hops == 0
    assert inproc.per_class["sl3"]["bound_us"] == pytest.approx(want, abs=1e-6)
    assert inproc.per_class["sl3"]["wait_us"] == pytest.approx(2 * wait_us, abs=1e-6)


def test_dla_bound_sums_the_dragonfly_route(ibqos_cli, tmp_path):
    """Under dla the worst route is CA → local → global → local → terminal (seed 003 Fig. 4):
    five links, four switches, each port charged the class's worst wait at its role."""
    plan_file = tmp_path / "plan.json"
    assert ibqos_cli("plan", EXAMPLES / "four-class.yaml", "-o", plan_file).returncode == 0
    plan = json.loads(plan_file.read_text())
    route = ["ca", "local", "global", "local", "terminal"]
    for name, e in plan["end_to_end"]["per_class"].items():
        assert e["ports"] == route and e["switch_hops"] == 3
        waits = sum(plan["analysis"][r]["per_class"][name]["worst_wait_us"] for r in route)
        want = waits + 5 * (4096 / EDR_BYTES_PER_US + 0.010) + 4 * 0.100
        assert e["bound_us"] == pytest.approx(want, abs=1e-6), name
    # a shorter route, asked of analyze: ca, local, global, terminal
    a = json.loads(ibqos_cli("analyze", plan_file, "--switch-hops", "2", "--json").stdout)
    assert a["end_to_end"]["per_class"]["VO"]["ports"] == ["ca", "local", "global", "terminal"]


def _four_class(tmp_path: Path, **vo) -> Path:
    doc = yaml.safe_load((EXAMPLES / "four-class.yaml").read_text())
    doc["classes"][0].update(vo)
    path = tmp_path / "four.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_unreachable_e2e_bound_is_refused_with_fixes_that_plan(ibqos_cli, tmp_path):
    """VO's bound on the dragonfly route is 36.49 µs; asking 35 is refused on its line, and
    every offered fix, applied to the YAML by this test, plans with VO within its bound."""
    policy = _four_class(tmp_path, max_e2e_latency_us=35)
    out = tmp_path / "plan.json"
    r = ibqos_cli("plan", policy, "-o", out)
    assert r.returncode == 2 and not out.exists()
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    want_line = next(  # the field's line in the file
        i for i, text in enumerate(policy.read_text().splitlines(), 1) if "max_e2e_latency_us" in text
    )
    assert lines[0].startswith(f"ibqos: error: {policy}:{want_line}: classes[0].max_e2e_latency_us: ")
    assert "end-to-end bound 36.49 µs exceeds max_e2e_latency_us 35 µs" in lines[0]
    assert "; feasible with " in lines[0], lines[0]
    fixes = offered_fixes(lines[0])
    assert (["classes", 0, "max_latency_us"], 6.58) in fixes  # every port within its share of 35 µs
    doc = yaml.safe_load(policy.read_text())
    for path, value in fixes:
        fixed = tmp_path / "fixed.yaml"
        fixed.write_text(yaml.safe_dump(_apply(doc, path, value), sort_keys=False))
        ok = ibqos_cli("plan", fixed, "-o", tmp_path / "fixed.json")
        assert ok.returncode == 0, (path, value, ok.stderr)
        plan = json.loads((tmp_path / "fixed.json").read_text())
        vo = plan["end_to_end"]["per_class"]["VO"]
        assert vo["meets"] is True and vo["bound_us"] <= plan["classes"][0]["latency"]["max_e2e_latency_us"]
        assert "max_e2e_latency_us" in ok.stdout and ": yes" in ok.stdout


def test_bound_below_the_fixed_part_says_so(ibqos_cli, tmp_path):
    """Below serialization + wire + switches nothing helps but fewer hops or a faster link."""
    r = ibqos_cli("plan", _four_class(tmp_path, max_e2e_latency_us=1), "-o", tmp_path / "p.json")
    assert r.returncode == 2
    assert "serialization, wire and switches alone take 2.09 µs" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_e2e_bound_needs_a_route_length_without_dla(ibqos_cli, tmp_path):
    doc = yaml.safe_load((EXAMPLES / "seed002-config-a.yaml").read_text())
    del doc["fabric"]["max_switch_hops"]
    doc["classes"][0]["max_e2e_latency_us"] = 10
    policy = tmp_path / "a.yaml"
    policy.write_text(yaml.safe_dump(doc, sort_keys=False))
    r = ibqos_cli("plan", policy, "-o", tmp_path / "p.json")
    assert r.returncode == 2 and "classes[0].max_e2e_latency_us" in r.stderr
    assert "set fabric.max_switch_hops" in r.stderr
    # without a bound to check, the plan says why it shows none
    del doc["classes"][0]["max_e2e_latency_us"]
    policy.write_text(yaml.safe_dump(doc, sort_keys=False))
    r = ibqos_cli("plan", policy, "-o", tmp_path / "p.json")
    assert r.returncode == 0 and "end-to-end bound: not computed" in r.stdout
