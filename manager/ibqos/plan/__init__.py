"""The plan document: `load_plan(path)`, `plan.save(path)` (PLAN_DOC contract)."""

from .load import load_plan
from .model import SCHEMA, Plan, PlanClass, PortOverride

__all__ = ["SCHEMA", "Plan", "PlanClass", "PortOverride", "load_plan"]
