"""The plan document: `Plan.load(path)`, `plan.save(path)` (PLAN_DOC contract)."""

from .model import ROLE_NAMES, SCHEMA, Plan, PlanClass, VlArbTables

__all__ = ["Plan", "PlanClass", "VlArbTables", "SCHEMA", "ROLE_NAMES"]
