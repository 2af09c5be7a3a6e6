"""The layers of the Python code, checked on the source (every import statement, also the ones
inside functions): no package imports one above it, and there is no cycle between the
top-level packages. README "Architecture" draws the same picture.

  ibqos (core: models and utilities; stages: planner, render, apply, verify, status)
    ↑ ibqos_sim (ibsim harness, simulator)    ↑ ibqos_testbed (hardware run)
      ↑ ibqos_app (orchestration: the dry run, apply composed, the commands)
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "ibqos": ROOT / "manager" / "ibqos",
    "ibqos_app": ROOT / "manager" / "ibqos_app",
    "ibqos_sim": ROOT / "ci-sim" / "ibqos_sim",
    "ibqos_testbed": ROOT / "testbed" / "ibqos_testbed",
}
LEVEL = {"ibqos": 0, "ibqos_sim": 1, "ibqos_testbed": 1, "ibqos_app": 2}
# Inside ibqos: the core never imports a stage or the command line.
CORE = (
    "errors",
    "paths",
    "proc",
    "inputfile",
    "docfile",
    "roles",
    "pipeline",
    "policy",
    "plan",
    "fabric",
    "arbiter",
    "extras",
    "term",
    "outpath",
    "findings",
    "vls",
)
ABOVE_CORE = ("planner", "render", "apply", "verify", "status", "health", "conformance", "redline", "cli")


def _modules(pkg: str):
    for f in sorted(PACKAGES[pkg].rglob("*.py")):
        rel = f.relative_to(PACKAGES[pkg]).with_suffix("")
        parts = [pkg, *rel.parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), f


def _imports(module: str, path: Path) -> set[str]:
    """Absolute names of everything `path` imports (relative imports resolved)."""
    out = set()
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_pkg else 0)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.add(name)
            out.update(f"{name}.{a.name}" for a in node.names)
    return out


def _graph() -> dict[str, set[str]]:
    return {mod: _imports(mod, path) for pkg in PACKAGES for mod, path in _modules(pkg)}


def test_no_package_imports_a_layer_above_it():
    bad = []
    for mod, imports in _graph().items():
        top = mod.split(".")[0]
        for name in imports:
            other = name.split(".")[0]
            if other in LEVEL and LEVEL[other] > LEVEL[top]:
                bad.append(f"{mod} imports {name}")
    assert not bad, bad


def test_no_cycle_between_top_level_packages():
    edges = {p: set() for p in PACKAGES}
    for mod, imports in _graph().items():
        for name in imports:
            if name.split(".")[0] in PACKAGES and name.split(".")[0] != mod.split(".")[0]:
                edges[mod.split(".")[0]].add(name.split(".")[0])
    seen, stack = set(), set()

    def visit(p):
        assert p not in stack, f"cycle through {p}: {edges}"
        if p in seen:
            return
        stack.add(p)
        for q in edges[p]:
            visit(q)
        stack.discard(p)
        seen.add(p)

    for p in edges:
        visit(p)


def test_the_core_imports_no_stage():
    bad = []
    for mod, imports in _graph().items():
        parts = mod.split(".")
        if parts[0] != "ibqos" or len(parts) < 2 or parts[1] not in CORE:
            continue
        for name in imports:
            n = name.split(".")
            if n[0] == "ibqos" and len(n) > 1 and n[1] in ABOVE_CORE:
                bad.append(f"{mod} imports {name}")
    assert not bad, bad


def test_the_check_sees_an_upward_import(tmp_path):
    """The walker itself: a relative import resolved to a package above is found."""
    f = tmp_path / "x.py"
    f.write_text("def f():\n    from ..dryrun import pipeline\n    import ibqos_sim.harness\n")
    got = _imports("ibqos.fabric.x", f)
    assert "ibqos.dryrun" in got and "ibqos_sim.harness" in got
