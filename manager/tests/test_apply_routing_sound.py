"""`apply` holds the routing in force to what `status --live` holds it to: every CA pair
reachable, no LID loop, no credit loop (health.routing_findings, with the SA's path SLs for an
engine that layers by SL). Before, it checked the tables and the MTU only, so a plan that
routed with dfsssp on a 12-CA dragonfly applied with 'the fabric equals the plan', exit 0,
while `status --live` found a credit loop at once: the class map as SL2VL put dfsssp's layers
(SLs 0-3) on one VL per class. A policy can no longer name dfsssp or lash (test_policy_yaml);
minhop's routing of the same dragonfly has a credit loop too, and is what the test applies.

Real OpenSM 3.3.23 with the plugin on ibsim (dragonfly a=2, p=2, h=1: 6 switches, 12 CAs)."""

from __future__ import annotations

import pytest
import yaml
from apply_helpers import child_env, run_apply
from ibqos.paths import REPO_ROOT
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from ibqos.render import render_plan
from ibqos_sim.harness import Harness
from ibqos_sim.harness.topology import dragonfly

pytestmark = pytest.mark.fabric


def _plan(tmp, name: str, routing: str, share: int):
    doc = yaml.safe_load((REPO_ROOT / "examples" / "two-class.yaml").read_text())
    doc["fabric"].update(routing=routing, data_vls=4)
    doc["classes"][0]["bandwidth"] = share
    (tmp / f"{name}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    plan = make_plan(load_policy(tmp / f"{name}.yaml"))
    plan.save(tmp / f"{name}.plan.json")
    return plan, tmp / f"{name}.plan.json"


def test_a_plan_whose_routing_has_a_credit_loop_is_rolled_back_not_verified(ibqos_cli, tmp_path):
    plan_a, _ = _plan(tmp_path, "a", "minhop", 40)
    _, path_b = _plan(tmp_path, "b", "minhop", 25)
    files = render_plan(plan_a, tmp_path / "cfg-a")
    net = dragonfly(2, 2, 1, 3).write_net(tmp_path / "fabric.net")
    with Harness(net, run_dir=tmp_path / "run", ibsim="debian") as h:
        # the admin's own files: plan A's, minhop already in force (routing_engine needs a restart)
        conf = {"event_plugin_options": str(files["plugin-tables.conf"])}
        sm = h.start_sm(engine="minhop", plugin=True, conf_files=[files["opensm.conf"]], conf=conf)
        live = ("status", "--live", "--opensm-conf", sm.conf, "--pid", sm.pid, "--sim-socket", h.sock)
        s = ibqos_cli(*live, env=child_env())
        assert s.returncode == 1 and "CREDIT LOOP: routing in force (minhop)" in s.stdout, s.stdout + s.stderr

        r = run_apply(ibqos_cli, h, sm, path_b)
        assert r.returncode == 1, r.stdout + r.stderr
        err = r.stderr.strip().splitlines()
        loop = "ibqos: error: read back: CREDIT LOOP: routing in force (minhop) has a credit loop: "
        assert len(err) == 1 and err[0].startswith(loop), r.stderr
        assert err[0].endswith("rolled back to v0000, fabric verified as before"), err
        assert "the fabric equals the plan" not in r.stdout
        s = ibqos_cli(*live, env=child_env())
        assert s.returncode == 1, s.stdout + s.stderr  # what apply said, status says
