"""The checker takes its roles from the groups dla routed with (its record), cross-checks them
with its own discovery, and says a disagreement once (docs/groups.md). On the hand-cabled
half-populated rack (groups of 4,4,4,4,2) a per-role override used to read as 21 differences:
the dry run failed and `apply` rolled a correct configuration back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from apply_helpers import run_apply
from ibqos.conformance import Expected, diff_programmed, expected_from_plan
from ibqos.fabric.dla_record import RECORD_FILE, DlaRecord
from ibqos.fabric.groups_in_force import groups_in_force, record_in
from ibqos.fabric.live import read_live
from ibqos.paths import REPO_ROOT
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from ibqos.render import render_plan
from ibqos_sim.harness.topology import dragonfly

sys.path.insert(0, str(REPO_ROOT / "plugin" / "tests"))
import adversarial_fabrics


def override_policy(tmp: Path, name: str, share: int) -> Path:
    """two-class.yaml with the qos class's share on global ports raised to 60 %."""
    text = (REPO_ROOT / "examples" / "two-class.yaml").read_text()
    text = text.replace("    bandwidth: 40\n", f"    bandwidth: {share}\n    roles: {{global: {{bandwidth: 60}}}}\n")
    assert "roles:" in text
    path = tmp / f"{name}.yaml"
    path.write_text(text)
    return path


def half_rack_net(tmp: Path) -> Path:
    net, first = adversarial_fabrics.half_rack()
    return net.write(tmp / "half-rack.net", first)


def record(members: list[list[int]], source: str = "discovered") -> DlaRecord:
    return DlaRecord.model_validate(
        {
            "schema": "ibqos.dla-record/2",
            "sweep": 1,
            "osm_pid": 1,
            "heavy_sweeps": 1,
            "subnet_up": 1,
            "state": "up",
            "engine": {"status": "routed"},
            "table_file": {"status": "none"},
            "groups": {"source": source, "alternative": 0, "members": [[hex(g) for g in m] for m in members]},
            "ports_complete": True,
            "ports": [],
        }
    )


def df72():
    topo = dragonfly(4, 2, 2)
    fabric = topo.to_fabric()
    by_name = {n.desc: n.guid for n in fabric.nodes.values()}
    groups: dict[int, list[int]] = {}
    for s in topo.switches:
        groups.setdefault(s.group, []).append(by_name[s.name])
    return fabric, list(groups.values())


def test_the_record_s_groups_are_used_and_agreement_is_silent():
    fabric, groups = df72()
    used = groups_in_force(fabric, record(groups))
    assert used.source == "dla's record (discovered)"
    assert used.disagreement is None and used.broken is None and not used.degraded


def test_a_valid_partition_that_differs_is_said_once_and_followed():
    fabric, groups = df72()
    split = [groups[0][:2], groups[0][2:], *groups[1:]]  # dla pinned halves of group 0
    used = groups_in_force(fabric, record(split, "pinned by the table file"))
    assert used.broken is None
    assert "groups of 4,4,4,4,4,4,4,4,2,2" in used.disagreement and "groups of 4,4,4,4,4,4,4,4,4" in used.disagreement
    assert used.groups[groups[0][0]] != used.groups[groups[0][2]]  # roles follow dla's groups


def test_a_record_that_breaks_the_spec_is_one_groups_finding():
    fabric, groups = df72()
    everything = [[g for m in groups for g in m]]
    used = groups_in_force(fabric, record(everything))
    assert "more than two local hops apart" in used.broken
    lines = diff_programmed(fabric, Expected([0] * 16, {}, {}), record=record(everything))
    assert lines[0].startswith("groups: dla's groups (discovered) break a rule: ")
    assert not any(ln.startswith("groups:") for ln in lines[1:])
    missing = groups_in_force(fabric, record(groups[1:]))  # a record of another fabric
    assert "has no group for switch" in missing.broken and missing.source == "the checker's discovery"


def test_a_record_older_than_the_sweep_is_not_used(tmp_path):
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    _, groups = df72()
    (dumps / RECORD_FILE).write_text(record(groups).model_dump_json(by_alias=True))
    assert record_in(dumps).groups.members == groups
    assert record_in(dumps, since=time.time() + 5) is None
    assert record_in(tmp_path / "absent") is None


@pytest.mark.fabric
def test_half_rack_with_a_role_override_dry_runs_clean(ibqos_cli, tmp_path):
    r = subprocess.run(
        [*ibqos_cli.argv, "dryrun", str(override_policy(tmp_path, "p", 40)), "--net", str(half_rack_net(tmp_path))]
        + ["--out", str(tmp_path / "run"), "--sim-time", "50"],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, COLUMNS="200"),
    )
    rep = json.loads((tmp_path / "run" / "report.json").read_text())
    assert rep["conformance"] == [], rep["conformance"][:3]
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert not any(n.startswith("groups:") for n in rep["notes"]), rep["notes"]
    # status judges the run by the same groups (dla's record): no table finding
    s = ibqos_cli("status", tmp_path / "run", "--json", timeout=300)
    assert s.returncode == 0 and json.loads(s.stdout)["findings"] == [], s.stdout[-2000:] + s.stderr[-2000:]


@pytest.mark.fabric
def test_half_rack_apply_with_a_role_override_is_not_rolled_back(ibqos_cli, tmp_path, ibsim_fabric):
    plans = {}
    for name, share in (("a", 40), ("b", 30)):
        plans[name] = make_plan(load_policy(override_policy(tmp_path, name, share)))
        plans[name].save(tmp_path / f"{name}.plan.json")
    files = render_plan(plans["a"], tmp_path / "cfg-a")
    with ibsim_fabric(half_rack_net(tmp_path), run_dir=tmp_path / "run") as h:
        sm = h.start_sm(engine="dla,minhop", plugin=True, conf_files=[files["opensm.conf"]])
        used = groups_in_force(read_live(h.env), record_in(sm.dumps))
        assert used.source == "dla's record (discovered)" and used.disagreement is None
        assert sorted(map(list(used.groups.values()).count, set(used.groups.values()))) == [2, 4, 4, 4, 4]
        r = run_apply(ibqos_cli, h, sm, tmp_path / "b.plan.json")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "rolled back" not in r.stdout + r.stderr
        assert "the fabric equals the plan" in r.stdout
        assert diff_programmed(read_live(h.env), expected_from_plan(plans["b"]), record=record_in(sm.dumps)) == []
        assert sm.alive()
