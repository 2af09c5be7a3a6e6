"""The layers of the Python code, checked module by module on the source (ast over every module
of every package the wheel ships, pyproject.toml's `wheel.packages`):

- every product module has a layer (LAYERS, bottom first; README "Architecture" has the same
  table, checked below) and imports nothing from a layer above its own;
- no import cycle between any two modules;
- imports are at module level: an import inside a function is allowed only when LAZY_IMPORTS
  declares it, with its reason.

Every import statement counts: at module level, under `if TYPE_CHECKING:` (a type is a
dependency too) and inside functions (unless declared lazy). An import is an edge to each
module Python runs for it: `import a.b.c` runs a, a.b and a.b.c; `from a.b import c` runs a,
a.b, and a.b.c when c is a module. A package that encloses the importing module is the one
exception: Python has started it before the module, so `from . import _core` inside
ibqos_sim.sim is an edge to ibqos_sim.sim._core, not to ibqos_sim.sim (its __init__ may be half
run, and nothing of it is read). `from . import NAME` where NAME is not a module reads the
package's namespace, so it is an edge to the package.
"""

from __future__ import annotations

import ast
import re
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Bottom first. A module may import its own layer and the layers below. A module takes the
# layer of the longest entry that is it or a package enclosing it; a package's own entry
# (`ibqos`) places the modules no longer entry names, the strictest place for a new one.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "core",
        (
            "ibqos",
            "ibqos.policy",
            "ibqos.plan",
            "ibqos.fabric",
            "ibqos.arbiter",
            "ibqos.errors",
            "ibqos.inputfile",
            "ibqos.docfile",
            "ibqos.templating",
            "ibqos.paths",
            "ibqos.proc",
            "ibqos.interrupt",
            "ibqos.pipeline",
            "ibqos.roles",
            "ibqos.vls",
            "ibqos.extras",
            "ibqos.term",
            "ibqos.outpath",
            "ibqos.findings",
            "ibqos.osmlog",
            "ibqos.osmconf",
            "ibqos.osmunit",
            "ibqos.osmplugin",
            "ibqos.faultspec",
        ),
    ),
    (
        "stages",
        (
            "ibqos.planner",
            "ibqos.render",
            "ibqos.apply",
            "ibqos.verify",
            "ibqos.conformance",
            "ibqos.redline",
            "ibqos.health",
            "ibqos.status",
            "ibqos.monitor",
            "ibqos_testbed",
        ),
    ),
    ("harness and simulator", ("ibqos_sim.harness", "ibqos_sim.sim", "ibqos_sim.slurm", "ibqos_sim.twin")),
    (
        "experiments",
        ("ibqos_sim", "ibqos_sim.campaign", "ibqos_sim.compare_engines", "ibqos_sim.paper", "ibqos_sim.sweeprun"),
    ),
    ("orchestration", ("ibqos_app", "ibqos_app.dryrun", "ibqos_app.apply")),
    ("commands", ("ibqos_app.cli",)),
)

# The only imports inside functions: (importing module, imported module) -> why it waits.
LAZY_IMPORTS: dict[tuple[str, str], str] = {
    ("ibqos.extras", "matplotlib"): "the `plot` extra, optional (ibqos[plot]): imported when a command draws, "
    "after require_plot() has said in one line that it is missing",
    ("ibqos.extras", "matplotlib.pyplot"): "as matplotlib, and only after matplotlib.use('Agg')",
}


def _packages() -> dict[str, Path]:
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return {Path(p).name: ROOT / p for p in conf["tool"]["scikit-build"]["wheel"]["packages"]}


def _modules(packages: dict[str, Path]) -> dict[str, Path]:
    out = {}
    for pkg, folder in packages.items():
        for f in sorted(folder.rglob("*.py")):
            parts = [pkg, *f.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = f
    return out


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # a module Python runs for the statement
    line: int
    where: str  # "module", "type-checking" or "function"


def _statements(tree: ast.Module):
    """(statement, where) for every import statement in the file."""

    def walk(node: ast.AST, where: str):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, where
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                yield from walk(child, "function")
            elif isinstance(child, ast.If) and where == "module" and "TYPE_CHECKING" in ast.unparse(child.test):
                for s in child.body:
                    yield from walk(ast.Module(body=[s], type_ignores=[]), "type-checking")
                for s in child.orelse:
                    yield from walk(ast.Module(body=[s], type_ignores=[]), where)
            else:
                yield from walk(child, where)

    yield from walk(tree, "module")


def imports_of(module: str, path: Path, known: set[str]) -> list[Import]:
    """The modules Python runs for each import statement of `module` (see the docstring):
    product modules (in `known`) and, for the lazy check, the names of the others."""
    is_pkg = path.name == "__init__.py"
    enclosing = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1 + is_pkg)}
    out = []

    def run(name: str, line: int, where: str, needs_namespace: bool = False) -> None:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            m = ".".join(parts[:i])
            if (m == name and needs_namespace) or m not in enclosing:
                out.append(Import(module, m, line, where))

    for node, where in _statements(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for a in node.names:
                run(a.name, node.lineno, where)
            continue
        if node.level:
            base = module.split(".")
            base = base[: len(base) - node.level + is_pkg]
            name = ".".join(base + ([node.module] if node.module else []))
        else:
            name = node.module or ""
        names = [a.name for a in node.names]
        run(name, node.lineno, where, needs_namespace=any(f"{name}.{n}" not in known for n in names))
        for n in names:
            if f"{name}.{n}" in known:
                out.append(Import(module, f"{name}.{n}", node.lineno, where))
    return out


def layer_of(module: str) -> int | None:
    best: tuple[int, int] | None = None  # (entry length, layer)
    for level, (_, entries) in enumerate(LAYERS):
        for e in entries:
            if (module == e or module.startswith(e + ".")) and (best is None or len(e) > best[0]):
                best = (len(e), level)
    return None if best is None else best[1]


def _graph() -> tuple[dict[str, Path], list[Import]]:
    mods = _modules(_packages())
    known = set(mods)
    return mods, [i for m, p in mods.items() for i in imports_of(m, p, known)]


def _counted(imports: list[Import], known: set[str]) -> list[Import]:
    """The edges between product modules that the layer and cycle checks judge."""
    return [
        i for i in imports if i.target in known and i.target != i.module and (i.module, i.target) not in LAZY_IMPORTS
    ]


def find_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative), each as
    one cycle through it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        comps.append(_cycle_in(set(comp), edges))
    return comps


def _cycle_in(comp: set[str], edges: dict[str, set[str]]) -> list[str]:
    """One cycle through the component's first module (breadth-first back to it)."""
    start = min(comp)
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges.get(v, ()) & comp):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [*reversed(path), start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return sorted(comp)


# ---- the product -----------------------------------------------------------------------


def test_every_product_module_has_a_layer():
    mods, _ = _graph()
    assert not [m for m in mods if layer_of(m) is None]
    entries = [e for _, es in LAYERS for e in es]
    assert not [e for e in entries if e not in mods], "a layer names a module that does not exist"
    assert len(entries) == len(set(entries))


def test_no_module_imports_a_layer_above_its_own():
    mods, imports = _graph()
    bad = [
        f"{i.module}:{i.line} ({LAYERS[layer_of(i.module)][0]}) imports {i.target} ({LAYERS[layer_of(i.target)][0]})"
        for i in _counted(imports, set(mods))
        if layer_of(i.target) > layer_of(i.module)
    ]
    assert not bad, "\n".join(bad)


def test_no_import_cycle_between_modules():
    mods, imports = _graph()
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for i in _counted(imports, set(mods)):
        edges[i.module].add(i.target)
    cycles = find_cycles(edges)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_imports_are_at_module_level_except_the_declared_lazy_ones():
    _, imports = _graph()
    inside = {(i.module, i.target): i for i in imports if i.where == "function"}
    undeclared = [
        f"{i.module}:{i.line}: import {i.target} inside a function" for k, i in inside.items() if k not in LAZY_IMPORTS
    ]
    assert not undeclared, "\n".join(undeclared)
    stale = [k for k in LAZY_IMPORTS if k not in inside]
    assert not stale, f"declared lazy but imported at module level (or not at all): {stale}"
    assert all(reason.strip() for reason in LAZY_IMPORTS.values())


def _architecture_names() -> dict[str, set[str]]:
    """Layer -> the packages and modules README's "Architecture" table names for it."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Architecture\n", 1)[1].split("\n## ", 1)[0]
    out: dict[str, set[str]] = {}
    for row in section.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")] if row.startswith("|") else []
        if len(cells) >= 2 and cells[0] in {name for name, _ in LAYERS}:
            out[cells[0]] = set(re.findall(r"`(ibqos\w*(?:\.\w+)*)`", cells[1]))
    return out


def test_readme_architecture_table_is_the_layers():
    """README's table and LAYERS name the same packages in the same layers, in the same order."""
    named = _architecture_names()
    assert list(named) == [name for name, _ in LAYERS], "README's layer rows, bottom first"
    for name, entries in LAYERS:
        assert named[name] == set(entries), (name, named[name] ^ set(entries))


# ---- the walker itself -----------------------------------------------------------------


def _write(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    mods = {}
    for name, src in files.items():
        parts = name.split(".")
        is_pkg = src.startswith("#pkg")
        f = tmp_path.joinpath(*parts, "__init__.py") if is_pkg else tmp_path.joinpath(*parts[:-1], parts[-1] + ".py")
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(src)
        mods[name] = f
    return mods


def _edges(mods: dict[str, Path]) -> dict[str, set[str]]:
    known = set(mods)
    out: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        for i in imports_of(m, p, known):
            if i.target in known and i.target != m:
                out[m].add(i.target)
    return out


def test_the_walker_sees_relative_typing_and_function_imports(tmp_path):
    mods = _write(
        tmp_path,
        {
            "p": "#pkg\n",
            "p.a": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
            "p.b": "def f():\n    from ..q import c\n",
            "q": "#pkg\n",
            "q.c": "",
        },
    )
    got = {(i.module, i.target, i.where) for m, p in mods.items() for i in imports_of(m, p, set(mods))}
    assert ("p.a", "p.b", "type-checking") in got
    assert ("p.b", "q", "function") in got and ("p.b", "q.c", "function") in got
    assert not any(t == "p" for m, t, _ in got if m.startswith("p.")), "an enclosing package is no edge"


def test_a_submodule_from_the_enclosing_package_is_no_cycle_a_name_from_it_is(tmp_path):
    """`from . import _core` (a module) is an edge to the module; `from . import NAME` reads the
    package's half-run namespace, a cycle with the __init__ that imports this module."""
    mods = _write(
        tmp_path,
        {"s": "#pkg\nfrom .run import go\n", "s.run": "from . import _core\ngo = 1\n", "s._core": ""},
    )
    assert find_cycles(_edges(mods)) == []
    (tmp_path / "s" / "run.py").write_text("from . import helper\ngo = 1\n")
    assert find_cycles(_edges(mods)) == [["s", "s.run", "s"]]


def test_import_a_b_runs_the_package_a_b(tmp_path):
    """`import x.y.z` runs x.y's __init__, which here imports the importer back."""
    mods = _write(tmp_path, {"x": "#pkg\n", "x.y": "#pkg\nimport w\n", "x.y.z": "", "w": "import x.y.z\n"})
    assert find_cycles(_edges(mods)) == [["w", "x.y", "w"]]


def test_the_layer_of_a_module_is_its_longest_entry():
    assert LAYERS[layer_of("ibqos.planner.synth")][0] == "stages"
    assert LAYERS[layer_of("ibqos.fabric.live")][0] == "core"
    assert LAYERS[layer_of("ibqos.some_new_module")][0] == "core"  # the strictest place
    assert LAYERS[layer_of("ibqos_sim.harness.topology")][0] == "harness and simulator"
    assert LAYERS[layer_of("ibqos_app.cli.dryrun")][0] == "commands"
    assert layer_of("numpy") is None


def test_readme_layout_names_every_top_level_folder():
    """README's "Layout" table and the folders of the checkout (those git tracks) are the same."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"^\| `([^`/]+)/` \|", section, re.M))
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    folders = {line.split("/", 1)[0] for line in tracked.splitlines() if "/" in line}
    assert named == folders, named ^ folders
