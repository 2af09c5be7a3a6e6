"""The plan document: `load_plan(path)`, `plan.save(path)` (PLAN_DOC contract)."""

from .load import load_plan
from .model import ROLE_NAMES, SCHEMA, Plan, PlanClass, PortOverride

__all__ = ["load_plan", "Plan", "PlanClass", "PortOverride", "SCHEMA", "ROLE_NAMES"]
