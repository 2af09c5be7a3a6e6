"""`ibqos apply` fails and rolls back when OpenSM logs an error in the sweep it starts: a
P_Key match rule whose partition does not exist (ERR AC14) and a plan whose partitions file
defines it (applied whole)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ibqos.conformance import diff_programmed, expected_from_plan
from ibqos.fabric.live import read_live
from ibqos.osmconf import parse
from ibqos.paths import REPO_ROOT
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from ibqos.render import render_plan
from ibqos_sim.harness.topology import dragonfly

pytestmark = pytest.mark.fabric


def _plan(tmp: Path, name: str, pkey: str | None = None, partitions: str | None = None):
    doc = yaml.safe_load((REPO_ROOT / "examples" / "two-class.yaml").read_text())
    doc["classes"][0]["match"] = {"pkey": [pkey]} if pkey else {}
    if partitions:
        (tmp / f"{name}.partitions.conf").write_text(partitions)
        doc["partitions"] = f"{name}.partitions.conf"
    (tmp / f"{name}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    plan = make_plan(load_policy(tmp / f"{name}.yaml"))
    plan.save(tmp / f"{name}.plan.json")
    return plan, tmp / f"{name}.plan.json"


def test_a_missing_partition_fails_the_apply_and_a_defined_one_passes(ibqos_cli, tmp_path, ibsim_fabric):
    plan_a, _ = _plan(tmp_path, "a")
    files = render_plan(plan_a, tmp_path / "cfg-a")
    part = tmp_path / "partitions.conf"  # OpenSM reads this path only at start
    part.write_text("Default=0x7fff : ALL=full ;\n")
    net = dragonfly(3, 1, 1).write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        sm = h.start_sm(
            engine="dla,minhop",
            plugin=True,
            conf_files=[files["opensm.conf"]],
            conf={"partition_config_file": str(part)},
        )

        def apply(path):
            return ibqos_cli(
                "apply", path, "--opensm-conf", sm.conf, "--pid", sm.pid, "--sim-socket", h.sock, timeout=300
            )

        _, path_b = _plan(tmp_path, "b", pkey="0x0a01")  # no partition for it
        policy_before = Path(parse(sm.conf.read_text())["qos_policy_file"]).read_text()
        r = apply(path_b)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "ERR AC14" in r.stderr and "rolled back" in r.stderr, r.stderr
        assert Path(parse(sm.conf.read_text())["qos_policy_file"]).read_text() == policy_before
        assert diff_programmed(read_live(h.env), expected_from_plan(plan_a)) == []

        plan_c, path_c = _plan(
            tmp_path, "c", pkey="0x0a01", partitions="Default=0x7fff : ALL=full ;\nt=0x0a01 : ALL=full ;\n"
        )
        r = apply(path_c)
        assert r.returncode == 0, r.stdout + r.stderr
        assert Path(parse(sm.conf.read_text())["partition_config_file"]) == part
        assert "t=0x0a01" in part.read_text()
        assert diff_programmed(read_live(h.env), expected_from_plan(plan_c)) == []
        assert sm.alive()
