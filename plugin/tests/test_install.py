"""`make install DESTDIR=…`: the plugin lands where Debian's OpenSM dlopen()s it (versioned,
with its SONAME), with the tools, templates, man pages, bash completion, /etc/ibqos and the
`ibqos` command in its private environment; OpenSM routes with the installed plugin, and the
installed tree laid over / runs in a clean environment (installed_root.py)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from dla_testlib import ENGINE, require_plugin
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly
from installed_root import MULTIARCH, ROOT, check_installed_tool, make_in_checkout, require_private_root

pytestmark = pytest.mark.fabric


def _install(dest: Path) -> None:
    built = sorted((ROOT / "build").glob("**/*.so*"))
    before = {p: p.stat().st_mtime_ns for p in built}
    cp = make_in_checkout("install", f"DESTDIR={dest}", timeout=300)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    # what was built is installed, not built again under the other worker's tests
    assert built and {p: p.stat().st_mtime_ns for p in built} == before


@pytest.fixture(scope="module")
def staged(once_per_run) -> Path:
    """`make install DESTDIR=…`, once per run (once_per_run); the tests only read the tree."""
    require_plugin()
    return once_per_run("destdir", _install)


def test_files_land_in_the_debian_layout(staged):
    lib = staged / "usr/lib" / MULTIARCH
    real = lib / "libibqos.so.1.0.0"
    assert real.is_file() and os.readlink(lib / "libibqos.so.1") == real.name
    assert os.readlink(lib / "libibqos.so") == "libibqos.so.1"
    soname = subprocess.run(["objdump", "-p", str(real)], capture_output=True, text=True).stdout
    assert "SONAME               libibqos.so.1" in soname
    for tool in ("ibqos", "ibqos-readback", "ibqos-tablecheck"):
        assert os.access(staged / "usr/bin" / tool, os.X_OK), tool
    assert (lib / "ibqos/libibqos_sim.so").is_file()
    assert (staged / "usr/share/ibqos/templates/opensm.conf.j2").is_file()
    (site,) = (staged / "usr/lib/ibqos/lib").glob("python3.*/site-packages")
    layout = json.loads((site / "ibqos/_layout.json").read_text())
    assert layout == {
        "libdir": f"/usr/lib/{MULTIARCH}",
        "pkglibdir": f"/usr/lib/{MULTIARCH}/ibqos",
        "bindir": "/usr/bin",
        "templates": "/usr/share/ibqos/templates",
    }
    # the system Python's packages are not touched; the launcher runs the private environment
    assert not (staged / "usr/lib/python3").exists()
    assert (staged / "usr/bin/ibqos").read_text().startswith("#!/usr/lib/ibqos/bin/python -I\n")
    man = {p.name for p in (staged / "usr/share/man/man1").iterdir()}
    assert {"ibqos.1", "ibqos-plan.1", "ibqos-apply.1", "ibqos-status.1", "ibqos-testbed-run.1"} <= man
    assert (staged / "usr/share/bash-completion/completions/ibqos").is_file()
    assert (staged / "etc/ibqos").is_dir() and not any((staged / "etc/ibqos").iterdir())


def test_the_staged_tree_names_no_staging_path(staged):
    """Built in DESTDIR, the environment works at its final path: no file names the staging
    directory (shebangs, pyvenv.cfg, the compiled .pyc files' source paths)."""
    cp = subprocess.run(["grep", "-rl", "--", str(staged), str(staged)], capture_output=True, text=True)
    assert cp.returncode == 1 and cp.stdout == "", cp.stdout


def test_opensm_routes_with_the_installed_plugin(staged, tmp_path, monkeypatch, ibsim_fabric):
    lib = staged / "usr/lib" / MULTIARCH
    monkeypatch.setenv("IBQOS_PLUGIN_DIR", str(lib))
    net = dragonfly(*DRAGONFLY_SIZES[42]).write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        sm = h.start_sm(engine=ENGINE, plugin=True, conf={"qos": "TRUE"})
        sm.wait_for_log(r"dla tables configured", timeout=120)
        maps = Path(f"/proc/{sm.pid}/maps").read_text()
        loaded = {ln.split()[-1] for ln in maps.splitlines() if "libibqos.so" in ln}
        assert loaded == {str(lib / "libibqos.so.1.0.0")}, loaded


def test_the_installed_tool_runs_in_a_clean_root(staged, tmp_path):
    require_private_root()
    check_installed_tool(staged, tmp_path)
