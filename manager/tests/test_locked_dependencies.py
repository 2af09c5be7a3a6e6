"""The lock files (requirements/, `make lock`) agree with pyproject.toml's ranges: every package
pinned with hashes, the runtime pins inside the ranges, dev.txt's runtime pins the runtime lock's,
floors.txt at each range's lowest version (what `make test-floors` runs on); and the checkout's
venv holds exactly dev.txt (`make deps` installs from it). A range edited without `make lock`,
or a venv set up another way, fails here."""

from __future__ import annotations

import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements"


def _pins(name: str) -> dict[str, str]:
    text = (LOCK / name).read_text()
    entries = re.split(r"\n(?=[a-z0-9])", text.split("\n", 2)[2])  # one block per package
    pins = {}
    for entry in entries:
        m = re.match(r"([a-z0-9_.-]+)==(\S+)", entry)
        assert m, (name, entry[:80])
        assert "--hash=sha256:" in entry, f"{name}: {m[1]} is pinned without a hash"
        pins[canonicalize_name(m[1])] = m[2]
    return pins


def _requirements(extras: tuple[str, ...] = ()) -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in extras:
        reqs += [Requirement(r) for r in project["optional-dependencies"][extra]]
    return reqs


def _floor(req: Requirement) -> str:
    (low,) = [s.version for s in req.specifier if s.operator == ">="]
    return low


@pytest.mark.parametrize("lock, extras", [("runtime.txt", ()), ("dev.txt", ("test", "plot"))])
def test_the_locks_pin_every_dependency_inside_its_range(lock, extras):
    pins = _pins(lock)
    for req in _requirements(extras):
        name = canonicalize_name(req.name)
        assert name in pins, f"{lock} does not pin {req.name}: run 'make lock'"
        assert req.specifier.contains(pins[name]), f"{lock}: {req.name}=={pins[name]} is outside {req}"


def test_dev_lock_has_the_runtime_locks_versions():
    runtime, dev = _pins("runtime.txt"), _pins("dev.txt")
    assert {n: dev.get(n) for n in runtime} == runtime


def test_floors_lock_is_every_direct_dependency_at_its_floor():
    pins = _pins("floors.txt")
    for req in _requirements(("test", "plot")):
        low, pinned = _floor(req), pins[canonicalize_name(req.name)]
        assert req.specifier.contains(low), req
        assert Version(pinned) == Version(low), f"floors.txt: {req.name}=={pinned}, not the floor of {req}"


def test_the_checkout_venv_is_the_lock():
    """`make deps` installed dev.txt; the floors venv (make test-floors) floors.txt."""
    lock = "floors.txt" if Path(sys.prefix).name == ".venv-floors" else "dev.txt"
    pins = _pins(lock)
    installed = {canonicalize_name(d.metadata["Name"]): d.version for d in importlib.metadata.distributions()}
    wrong = {n: (v, installed.get(n)) for n, v in pins.items() if installed.get(n) != v}
    assert not wrong, f"installed packages differ from requirements/{lock} (name: (locked, installed)): {wrong}"
