"""Plans for each data-VL count a port runs, rendered (test_data_vls_live.py, test_fallback.py)."""

from __future__ import annotations

from pathlib import Path

import yaml
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from ibqos.render import render_plan

ROOT = Path(__file__).resolve().parents[2]


def count_policy(tmp_path: Path, data_vls: int) -> Path:
    """two-class (dla) at `data_vls`; one class on 2 VLs (dla uses 2 per class); and at 1 VL,
    where dla has no room for a class at all, one class routed by minhop."""
    doc = yaml.safe_load((ROOT / "examples" / "two-class.yaml").read_text())
    doc["fabric"]["data_vls"] = data_vls
    if data_vls <= 2:
        doc["classes"] = [{"name": "all", "priority": "low", "bandwidth": "rest", "default": True}]
    if data_vls == 1:
        doc["fabric"]["routing"] = "minhop"
    path = tmp_path / f"policy-{data_vls}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def render_count(tmp_path: Path, data_vls: int):
    """(plan, rendered files) for `data_vls`, planned at ibsim's 8/8 VLArb entries."""
    plan = make_plan(load_policy(count_policy(tmp_path, data_vls)), cap=(8, 8))
    return plan, render_plan(plan, tmp_path / f"cfg-{data_vls}")


def linked_op_vls(fabric) -> dict[tuple[str, int], int]:
    """OperVLs of every linked port, CAs' and switches', as read back."""
    return {(n.desc, p.num): p.op_vls for n in fabric.nodes.values() for p in n.ports.values() if p.remote}
