"""Plan-derived VLArb is an explicit, labelled overlay: only ports the model has no VLArb for
get the plan's table, and `ibqos simulate` says which ports those were."""

from __future__ import annotations

import json

from ibqos.fabric.groups import port_roles
from ibqos.paths import REPO_ROOT
from ibqos.planner import make_plan
from ibqos.policy.load import load_policy
from ibqos_sim.sim import overlay_plan_vlarb
from simfabrics import dragonfly_dla


def _plan():
    return make_plan(load_policy(REPO_ROOT / "examples" / "two-class.yaml"), cap=(8, 8))


def _fabric_missing_two():
    f = dragonfly_dla(vls=2)
    roles = port_roles(f)
    ca = next(n for n in f.cas())
    sw = next(n for n in f.switches())
    glob = next(p for p in sorted(sw.ports) if roles.get((sw.guid, p)) == "global")
    ca.ports[1].vlarb = None
    sw.ports[glob].vlarb = None
    return f, {(ca.guid, 1, "ca"), (sw.guid, glob, "global")}, (ca, sw, glob)


def test_only_ports_without_vlarb_get_the_plans_table_and_are_listed():
    f, missing, (ca, sw, glob) = _fabric_missing_two()
    before = {(n.guid, p.num): p.vlarb for n in f.nodes.values() for p in n.ports.values() if p.vlarb}
    plan = _plan()
    ov = overlay_plan_vlarb(f, plan, "plan.json")
    assert set(ov.ports) == missing
    assert ca.ports[1].vlarb.tables() == plan.vlarb.ca and ca.ports[1].vlarb.high_cap == plan.fabric.high_cap
    assert sw.ports[glob].vlarb.tables() == plan.vlarb.role("global")
    after = {(n.guid, p.num): p.vlarb for n in f.nodes.values() for p in n.ports.values() if p.vlarb}
    assert all(after[k] == v for k, v in before.items())  # read-back tables untouched
    assert ov.note() == "VLArb of 2 ports from the plan plan.json, not read back from the fabric"
    assert sorted(ov.names(f)) == sorted([f"{ca.desc}:1 (ca)", f"{sw.desc}:{glob} (global)"])


def test_simulate_reports_which_ports_came_from_the_plan(ibqos_cli, tmp_path):
    f, _, (ca, sw, glob) = _fabric_missing_two()
    f.save(tmp_path / "fabric.json")
    _plan().save(tmp_path / "plan.json")
    cp = ibqos_cli("simulate", tmp_path, "--time-us", "30", "--load", "0.3", "--json", timeout=300)
    assert cp.returncode == 0, cp.stderr[-2000:]
    ov = json.loads(cp.stdout)["vlarb_overlay"]
    assert ov["source"] == f"plan {tmp_path / 'plan.json'}" and ov["count"] == 2
    assert sorted(ov["ports"]) == sorted([f"{ca.desc}:1 (ca)", f"{sw.desc}:{glob} (global)"])
    saved = json.loads(next((tmp_path / "sim").glob("*.json")).read_text())
    assert saved["vlarb_overlay"] == ov

    dragonfly_dla(vls=2).save(tmp_path / "fabric.json")  # every table read back: no overlay
    cp = ibqos_cli("simulate", tmp_path, "--time-us", "30", "--load", "0.3", "--json", timeout=300)
    assert cp.returncode == 0 and "vlarb_overlay" not in json.loads(cp.stdout)
