"""A switch that comes up after the apply (cabled at runtime): once OpenSM's next sweep has
programmed it, `ibqos status --live` holds its ports to the applied plan like every other's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from apply_helpers import child_env, run_apply, sm_on_plan_a
from ibqos.fabric.live import read_live
from ibqos.paths import REPO_ROOT
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from ibqos.proc import wait_until
from smp_edit import dr_paths, sl2vl

pytestmark = pytest.mark.fabric
NEW = "sw-g3-s2"
LINKS = ((2, "sw-g3-s0", 3), (3, "sw-g3-s1", 3), (4, "sw-g1-s2", 4))


def _without_new_switch_links(text: str) -> str:
    """The net file with NEW's switch links left out on both ends: ibsim starts with them unlinked."""
    out, node = [], None
    for line in text.splitlines():
        if m := re.match(r'(?:Switch|Hca)\s+\d+\s+"([^"]+)"', line):
            node = m[1]
        m = re.match(r'\[(\d+)\]\s+"([^"]+)"\[(\d+)\]', line)
        if m and ((node == NEW and m[2] != "ca-g3-s2-h0") or (m[2] == NEW and node != "ca-g3-s2-h0")):
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def _detour_plan(tmp: Path) -> Path:
    """two-class with a third VL per class for detours (fault_tolerance: links): dla routes the
    dragonfly that lacks NEW's links, and the whole one once they are up."""
    doc = yaml.safe_load((REPO_ROOT / "examples" / "two-class.yaml").read_text())
    doc["fabric"]["fault_tolerance"] = "links"
    (tmp / "detour.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    path = tmp / "detour.plan.json"
    make_plan(load_policy(tmp / "detour.yaml")).save(path)
    return path


def test_a_switch_linked_after_the_apply_is_held_to_the_plan_once_opensm_swept_it(ibqos_cli, tmp_path):
    """NEW is in ibsim's net file with its switch links left out (a switch racked but not yet
    cabled): OpenSM and the apply (v0001, verified) never saw it. Then its three links come up
    on ibsim's console (`Link`), OpenSM's periodic sweep finds it and dla programs it. `status
    --live` reads it with the rest and holds its ports to the applied plan: exit 0 once its
    tables are its peer's in the same role (read with SMPs, not through ibqos), and one SL2VL
    table changed on it by SMP is finding `tables`, naming NEW, exit 1. Checked: no fix needed."""
    with sm_on_plan_a(tmp_path, console=True, net_edit=_without_new_switch_links) as (h, sm, _, _):
        assert NEW not in {n.desc for n in read_live(h.env).switches()}
        r = run_apply(ibqos_cli, h, sm, _detour_plan(tmp_path))
        assert r.returncode == 0 and "read back: every port equals the plan" in r.stdout, r.stdout + r.stderr
        status = ("status", "--live", "--json", "--opensm-conf", sm.conf, "--sim-socket", h.sock)
        assert ibqos_cli(*status, env=child_env()).returncode == 0

        for port, peer, peer_port in LINKS:
            h.command(f'Link "{NEW}"[{port}] "{peer}"[{peer_port}]')
        fabric = read_live(h.env)
        dr = dr_paths(h, fabric)
        new, twin = (next(n for n in fabric.switches() if n.desc == d) for d in (NEW, "sw-g1-s2"))
        # port 1 faces its CA, 2 and 3 its group, 4 the global link: the same roles on both
        pairs = [(a, b) for a in range(1, 5) for b in range(1, 5) if a != b]

        def swept() -> bool:
            record = sm.record()
            same = all(sl2vl(h, dr[new.guid], a, b) == sl2vl(h, dr[twin.guid], a, b) for a, b in pairs)
            return same and record is not None and record.state == "up" and record.engine.status == "routed"

        wait_until(swept, timeout=120, what=f"OpenSM to program {NEW}")
        s = ibqos_cli(*status, env=child_env())
        assert s.returncode == 0 and json.loads(s.stdout)["findings"] == [], s.stdout + s.stderr

        planned = sl2vl(h, dr[new.guid], 4, 2)
        drifted = ("7" if planned[0] != "7" else "6") + planned[1:]
        assert sl2vl(h, dr[new.guid], 4, 2, drifted) == drifted
        s = ibqos_cli(*status, env=child_env())
        assert s.returncode == 1, s.stdout + s.stderr
        found = json.loads(s.stdout)["findings"]
        assert [f["kind"] for f in found] == ["tables"], found
        assert f"{NEW}:2 in 4 " in found[0]["message"] and f"SL2VL {drifted} planned {planned}" in found[0]["message"]
