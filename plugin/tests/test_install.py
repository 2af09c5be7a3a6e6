"""`make install DESTDIR=…`: the plugin lands where Debian's OpenSM dlopen()s it (versioned,
with its SONAME), with the tools, templates and the `ibqos` launcher; OpenSM routes with the
installed plugin, and the installed CLI runs under /usr/bin/python3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ibqos_sim.harness import Harness
from ibqos_sim.topology import DRAGONFLY_SIZES, dragonfly

from dla_testlib import ENGINE, require_plugin

pytestmark = pytest.mark.fabric

ROOT = Path(__file__).resolve().parents[2]
MULTIARCH = (
    subprocess.run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"], capture_output=True, text=True).stdout.strip()
    or "x86_64-linux-gnu"
)


@pytest.fixture(scope="module")
def staged(tmp_path_factory) -> Path:
    require_plugin()
    dest = tmp_path_factory.mktemp("destdir")
    cp = subprocess.run(
        ["make", "-s", "install", f"DESTDIR={dest}"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert cp.returncode == 0, cp.stdout + cp.stderr
    return dest


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
    layout = json.loads((staged / "usr/lib/python3/dist-packages/ibqos/_layout.json").read_text())
    assert layout == {
        "libdir": f"/usr/lib/{MULTIARCH}",
        "pkglibdir": f"/usr/lib/{MULTIARCH}/ibqos",
        "bindir": "/usr/bin",
        "templates": "/usr/share/ibqos/templates",
    }


def test_opensm_routes_with_the_installed_plugin(staged, tmp_path, monkeypatch):
    lib = staged / "usr/lib" / MULTIARCH
    monkeypatch.setenv("IBQOS_PLUGIN_DIR", str(lib))
    net = dragonfly(*DRAGONFLY_SIZES[42]).write_net(tmp_path / "fabric.net")
    with Harness(net, run_dir=tmp_path / "run") as h:
        sm = h.start_sm(engine=ENGINE, plugin=True, conf={"qos": "TRUE"})
        sm.wait_for_log(r"dla tables configured", timeout=120)
        maps = Path(f"/proc/{sm.pid}/maps").read_text()
        loaded = {ln.split()[-1] for ln in maps.splitlines() if "libibqos.so" in ln}
        assert loaded == {str(lib / "libibqos.so.1.0.0")}, loaded


def test_installed_cli_runs_under_the_system_python(staged, tmp_path):
    """The launcher runs /usr/bin/python3 on the installed packages; their dependencies
    (pydantic 2, …) come from the venv here, as from pip/pipx on a host (README)."""
    site = staged / "usr/lib/python3/dist-packages"
    deps = next(p for p in sys.path if p.endswith("site-packages"))
    env = dict(
        os.environ, PYTHONPATH=f"{site}{os.pathsep}{deps}", IBQOS_TEMPLATES=str(staged / "usr/share/ibqos/templates")
    )

    def run(*a):
        return subprocess.run(
            ["/usr/bin/python3", str(staged / "usr/bin/ibqos"), *a],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
        )

    cp = run("plan", str(ROOT / "examples/two-class.yaml"), "-o", "plan.json")
    assert cp.returncode == 0, cp.stderr
    cp = run("render", "plan.json", "-o", "out")
    assert cp.returncode == 0, cp.stderr
    assert "routing_engine dla" in (tmp_path / "out/opensm.conf").read_text()
    where = subprocess.run(
        [
            "/usr/bin/python3",
            "-c",
            "import ibqos.paths as p; print(p.product('manager/readback/ibqos-readback'), p.plugin_dir())",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert where.stdout.split() == ["/usr/bin/ibqos-readback", f"/usr/lib/{MULTIARCH}"], where.stderr
