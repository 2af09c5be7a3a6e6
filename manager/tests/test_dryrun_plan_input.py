"""`ibqos dryrun PLAN.json`: the admin's plan is judged as it is, checked and never planned again
from a policy (issue 22 item 4). Through the console script, on the smallest fabric (one
switch, four CAs, minhop)."""

from __future__ import annotations

import json

import pytest
from test_dryrun import EXAMPLES, dryrun

ONE_SWITCH = ("--topology", "fattree:leaves=1,spines=0,hosts=4")
# 8/8 entries and MTU 2048: what the ports of either ibsim hold
POLICY = """\
fabric:
  rate: EDR
  mtu: 2048
  data_vls: 2
  vlarb_cap: {high: 8, low: 8}
  routing: minhop
  max_switch_hops: 0
classes:
  - name: fast
    priority: high
    bandwidth: 30
    sls: [0]
  - name: bulk
    priority: low
    bandwidth: rest
    default: true
    sls: [1]
"""


def _plan(ibqos_cli, tmp_path, policy_text: str = POLICY) -> dict:
    policy = tmp_path / "policy.yaml"
    policy.write_text(policy_text)
    cp = ibqos_cli("plan", policy, "-o", tmp_path / "plan.json")
    assert cp.returncode == 0, cp.stderr
    policy.unlink()  # a dry run of the plan cannot plan it again
    return json.loads((tmp_path / "plan.json").read_text())


@pytest.mark.fabric
def test_the_admins_plan_is_programmed_and_judged_as_given(ibqos_cli, tmp_path):
    """The CA role's low table in the reverse order of the planner's (same shares, another
    table the planner never writes): OpenSM programs exactly it, and the run judges it."""
    doc = _plan(ibqos_cli, tmp_path)
    low = doc["vlarb"]["ca"]["low"]
    assert low != low[::-1], "the edit must change the table"
    doc["vlarb"]["ca"]["low"] = low[::-1]
    given = tmp_path / "edited.json"
    given.write_text(json.dumps(doc, indent=1))

    r = dryrun(ibqos_cli, given, tmp_path / "run", *ONE_SWITCH)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    run = tmp_path / "run"
    assert json.loads((run / "plan.json").read_text()) == doc  # kept as given, not re-planned
    conf = (run / "config" / "opensm.conf").read_text()
    assert "qos_ca_vlarb_low " + ",".join(f"{vl}:{w}" for vl, w in low[::-1]) in conf.splitlines()
    rep = json.loads((run / "report.json").read_text())
    assert rep["input"] == "plan" and rep["ok"]
    assert rep["conformance"] == []  # every CA port holds the admin's order, read back
    assert rep["vlarb_capacity"]["judged"] == "plan" and rep["vlarb_capacity"]["plan"] == [8, 8]
    check = next(c for c in rep["fabric_checks"] if c["check"] == "VLArb plan judged")
    assert check["result"].startswith("the plan as given 8/8")


@pytest.mark.fabric
def test_a_plan_above_the_ports_is_refused_naming_the_plan(ibqos_cli, tmp_path):
    """Seed 002's 64/64 policy plans 32/32 entries (what OpenSM programs); Debian's ibsim holds
    8/8: refused, exit 1, nothing judged, and the way out is to plan for the ports."""
    _plan(ibqos_cli, tmp_path, (EXAMPLES / "seed002-config-a.yaml").read_text())
    plan = tmp_path / "plan.json"
    r = dryrun(ibqos_cli, plan, tmp_path / "run", *ONE_SWITCH, "--ibsim", "debian")
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    err = r.stderr.strip().splitlines()[-1]
    assert err.startswith(
        f"ibqos: error: dry run refused: {plan}: fabric.high_cap/low_cap: the plan asks 32/32 VLArb entries, "
        "the fabric's ports hold 8/8: 8 of 8 ports below it ("
    ), err
    assert err.endswith("plan the policy for 8/8, or dry-run the policy with --fit-to-fabric"), err
    assert not (tmp_path / "run" / "report.json").exists()


@pytest.mark.parametrize(
    "edit, extra, says",
    [
        (lambda d: d["fabric"].__setitem__("data_vls", 3), (), "fabric.data_vls: 3 data VLs"),
        (lambda d: d.__setitem__("schema", "ibqos.plan/2"), (), "written by another version of ibqos"),
        (lambda d: None, ("--fit-to-fabric",), "given.json: --fit-to-fabric: fitting plans the policy again"),
    ],
)
def test_a_plan_the_run_cannot_judge_is_one_line_before_anything_starts(ibqos_cli, tmp_path, edit, extra, says):
    doc = _plan(ibqos_cli, tmp_path)
    edit(doc)
    given = tmp_path / "given.json"
    given.write_text(json.dumps(doc, indent=1))
    r = dryrun(ibqos_cli, given, tmp_path / "run", *ONE_SWITCH, *extra)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ibqos: error: ") and says in lines[0], r.stderr
    assert not (tmp_path / "run").exists()
