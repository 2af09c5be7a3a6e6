"""Issue 12, "one contract per concept": the VLArb value type is `ibqos.arbiter.ArbTable`, and
the names of the types it replaced appear nowhere in the Python code (as identifiers: the
IB attribute "VLArb" stays in prose)."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [
    f
    for top in ("manager", "ci-sim", "testbed", "bench", "plugin")
    for f in (ROOT / top).rglob("*.py")
    if "build" not in f.parts and ".venv" not in f.parts
]
GONE = {"VLArb", "VlArbTables", "TableSet", "_PlanView"}


def _names(path: Path) -> set[str]:
    toks = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return {t.string for t in toks if t.type == tokenize.NAME}


def test_the_replaced_vlarb_types_are_gone():
    hits = [f"{f.relative_to(ROOT)}: {sorted(_names(f) & GONE)}" for f in SOURCES if _names(f) & GONE]
    assert not hits, hits


def test_one_class_holds_a_vlarb_table():
    defined = [
        f"{f.relative_to(ROOT)}:{node.lineno}"
        for f in SOURCES
        for node in ast.walk(ast.parse(f.read_text()))
        if isinstance(node, ast.ClassDef) and node.name == "ArbTable"
    ]
    assert len(defined) == 1 and defined[0].startswith("manager/ibqos/arbiter/table.py:"), defined


def test_the_check_sees_an_identifier(tmp_path):
    f = tmp_path / "x.py"
    f.write_text('"""VLArb in prose"""\nfrom ibqos.fabric.model import VLArb\n')
    assert _names(f) & GONE == {"VLArb"}
