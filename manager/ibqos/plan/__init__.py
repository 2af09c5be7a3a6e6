"""The plan document: `Plan.load(path)`, `plan.save(path)` (PLAN_DOC contract)."""

from .model import SCHEMA, Plan, PlanClass, PortOverride

__all__ = ["Plan", "PlanClass", "PortOverride", "SCHEMA"]
