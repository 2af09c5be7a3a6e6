"""A plan file -> a Plan whose parts agree (schema, then plan.check), or one
`file:line: field: message` error (as policy.load does for a policy)."""

from __future__ import annotations

from pathlib import Path

from ..docfile import SMALL_DOC_LIMIT, read_json_text, validate
from ..errors import InputError
from .check import check_plan
from .model import SCHEMA, Plan


def load_plan(path: str | Path) -> Plan:
    doc, text = read_json_text(path, limit=SMALL_DOC_LIMIT, what="a plan")
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else None
        if isinstance(got, str) and got.startswith("ibqos.plan/"):
            raise InputError(
                f"written by another version of ibqos (schema {got!r}; this one reads {SCHEMA!r}): "
                "plan the policy again with this version",
                file=path,
                line=1,
                field="schema",
            )
        raise InputError(f"not an ibqos plan (schema {got!r}, want {SCHEMA!r})", file=path)
    plan = validate(Plan, doc, path, text=text)
    check_plan(plan, path, text)
    return plan
