"""IPoIB's broadcast group keeps its SL across a sweep: OpenSM 3.3.23 creates each `ipoib`
partition's broadcast group on the partition's `sl=` once, and a heavy sweep that re-reads a
partitions file with another `sl=` finds the group and leaves it as it is, until OpenSM starts
again. An apply that changes a partition's `sl=` therefore swaps the file in, verifies the
tables, and leaves IPoIB's broadcast and multicast on the old SL, in another class."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from apply_helpers import child_env, opensm_restarted, programmed_equals, run_apply, sm_on_plan_a
from ibqos.fabric.dla_record import own_record
from ibqos.paths import REPO_ROOT
from ibqos.plan import Plan
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from ibqos.proc import wait_until
from ibqos_sim.harness.diags import saquery_ipoib_broadcast_sls

pytestmark = pytest.mark.fabric


def _ipoib_plan(tmp: Path) -> tuple[Plan, Path]:
    """two-class with IPoIB in the qos class (SL 1) and the Default partition's group on sl=1."""
    doc = yaml.safe_load((REPO_ROOT / "examples" / "two-class.yaml").read_text())
    doc["classes"][0]["match"] = {"ulps": ["ipoib"]}
    (tmp / "sl1.partitions.conf").write_text("Default=0x7fff, ipoib, sl=1 : ALL=full ;\n")
    doc["partitions"] = "sl1.partitions.conf"
    (tmp / "sl1.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    path = tmp / "sl1.plan.json"
    plan = make_plan(load_policy(tmp / "sl1.yaml"))
    plan.save(path)
    return plan, path


def test_an_apply_that_changes_ipoib_sl_says_the_group_keeps_its_sl_until_opensm_restarts(ibqos_cli, tmp_path):
    """The Default partition's group is on SL 0 (no sl=); the plan moves IPoIB to the qos class
    and its group to sl=1. Before, the apply swept the file in, read back the tables and said
    'the fabric equals the plan', exit 0, and status said OK, while the SA (saquery -g) still
    handed the group out on SL 0, in the other class. Now apply keeps v0001 and ends on one line
    naming the file's line, both SLs and the restart, exit 1 (its dry run says so in a note);
    status is finding `ipoib-sl`, exit 1,
    and so is an apply of the same plan again ('nothing written'); after the restart the SA
    hands SL 1 out and both pass."""
    part = tmp_path / "partitions.conf"  # OpenSM reads this path only at start
    part.write_text("Default=0x7fff, ipoib : ALL=full ;\n")
    with sm_on_plan_a(tmp_path, conf={"partition_config_file": str(part)}) as (h, sm, _, _):
        assert saquery_ipoib_broadcast_sls(h.env, tmp_path) == {0x7FFF: 0}
        plan, path = _ipoib_plan(tmp_path)
        said = (
            f"{part}:1: the IPoIB broadcast group of partition Default (P_Key 0x7fff) is on SL 0 at the SA, "
            "this file says sl=1: "
        )
        dry = run_apply(ibqos_cli, h, sm, path, "--dry-run")  # the preview says it before anything is written
        assert dry.returncode == 0 and f"note: {said}" in dry.stdout, dry.stdout + dry.stderr
        assert "; apply keeps the new version and ends on this line, exit 1" in dry.stdout
        r = run_apply(ibqos_cli, h, sm, path)
        assert r.returncode == 1, r.stdout + r.stderr
        assert "read back: every port equals the plan" in r.stdout and "rolling back" not in r.stdout
        [line] = r.stderr.splitlines()
        assert line.startswith(f"ibqos: error: {said}OpenSM sets a group's SL only when it creates it"), line
        assert f"restart OpenSM (stop pid {sm.pid} " in line and line.endswith("; v0001 stays, its tables verified")
        journal = json.loads((sm.conf.parent / "ibqos.d" / "journal.json").read_text())
        assert (journal["version"], journal["state"]) == ("v0001", "verified")
        assert "sl=1" in part.read_text() and programmed_equals(h, plan)
        assert saquery_ipoib_broadcast_sls(h.env, tmp_path) == {0x7FFF: 0}  # the sweep kept the group

        s = ibqos_cli("status", "--live", "--json", "--opensm-conf", sm.conf, "--sim-socket", h.sock, env=child_env())
        assert s.returncode == 1, s.stdout + s.stderr
        found = json.loads(s.stdout)["findings"]
        assert [f["kind"] for f in found] == ["ipoib-sl"] and found[0]["message"].startswith(said), found
        again = run_apply(ibqos_cli, h, sm, path)
        assert again.returncode == 1 and "no change" in again.stdout, again.stdout + again.stderr
        assert again.stderr.strip().endswith("; nothing written") and said in again.stderr

        with opensm_restarted(h, sm, tmp_path / "restarted") as osm:
            # its first sweep over (the partitions, the groups): the record says SUBNET UP
            wait_until(lambda: (rec := own_record(sm.dumps, osm.pid)) is not None and rec.subnet_up > 0, timeout=120)
            assert saquery_ipoib_broadcast_sls(h.env, tmp_path) == {0x7FFF: 1}
            on = ("--opensm-conf", sm.conf, "--pid", str(osm.pid), "--sim-socket", h.sock)
            s = ibqos_cli("status", "--live", *on, env=child_env())
            assert s.returncode == 0 and "status: OK" in s.stdout, s.stdout + s.stderr
            r = ibqos_cli("apply", path, *on, env=child_env())
            assert r.returncode == 0 and "no change" in r.stdout, r.stdout + r.stderr
            assert f"SA: every IPoIB broadcast group on its partition's sl= ({part})" in r.stdout
