"""`pip install` of a built wheel, outside the checkout: the wheel is built by the package's own
backend (scikit-build-core over CMakeLists.txt) and installed into a fresh venv in a temporary
directory, with the runtime dependencies only (no matplotlib: the `plot` extra), from the
wheels `make deps` keeps in .venv/wheelhouse, so nothing is fetched. The commands then run
from that venv, in that directory, with nothing of the checkout on their path."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from simfabrics import config_a, star

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
WHEELHOUSE = Path(sys.prefix) / "wheelhouse"
CORE = "ibqos_sim/sim/libibqos_sim.so"


def _run(cmd, cwd, env=None, timeout=300):
    return subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def _build_wheel(dist: Path) -> None:
    # --no-build-isolation: the backend installed in .venv by `make deps`, not a download
    cp = _run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "-w", dist, ROOT], cwd=dist
    )
    assert cp.returncode == 0, cp.stdout + cp.stderr


@pytest.fixture(scope="module")
def wheel(once_per_run) -> Path:
    """Built once per run (once_per_run)."""
    (whl,) = once_per_run("wheel", _build_wheel).glob("ibqos-*.whl")
    return whl


def _make_venv(home: Path, wheel: Path) -> None:
    cp = _run([sys.executable, "-m", "venv", home / "venv"], cwd=home)
    assert cp.returncode == 0, cp.stderr
    pip = home / "venv/bin/pip"
    cp = _run([pip, "install", "-q", "--no-index", "--find-links", WHEELHOUSE, wheel], cwd=home)
    assert cp.returncode == 0, cp.stdout + cp.stderr


@pytest.fixture(scope="module")
def venv(wheel, once_per_run) -> Path:
    """The fresh venv, made once per run (once_per_run) for both workers: a test holds it
    shared (host) or, when it takes a package out and puts it back, alone (host_alone)."""
    if not (WHEELHOUSE.is_dir() and any(WHEELHOUSE.glob("*.whl"))):
        pytest.fail(f"{WHEELHOUSE} holds no wheels: run 'make deps'")
    return once_per_run("wheel-venv", lambda home: _make_venv(home, wheel)) / "venv"


@contextmanager
def _holding(venv: Path, how: int) -> Iterator[None]:
    with open(venv.parent / "venv.lock", "w") as lock:
        fcntl.flock(lock, how)
        yield


@pytest.fixture
def host(venv, tmp_path):
    with _holding(venv, fcntl.LOCK_SH):
        yield _host(venv, tmp_path)


@pytest.fixture
def host_alone(venv, tmp_path):
    with _holding(venv, fcntl.LOCK_EX):
        yield _host(venv, tmp_path)


def _host(venv: Path, tmp_path: Path):
    """Run `ibqos` from the fresh venv in tmp_path, with an environment that names nothing of
    the checkout (no IBQOS_* overrides, no PYTHONPATH, the venv first on PATH)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IBQOS_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}/usr/bin:/bin"

    def run(*args):
        return _run([venv / "bin/ibqos", *args], cwd=tmp_path, env=env)

    run.python = lambda code, path=env["PATH"]: _run(
        [venv / "bin/python", "-c", code], cwd=tmp_path, env=dict(env, PATH=path)
    )
    run.dir = tmp_path
    return run


def test_the_wheel_holds_the_core_and_the_templates_and_no_plugin(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert CORE in names
    assert "ibqos/templates/opensm.conf.j2" in names and "ibqos/templates/report.html.j2" in names
    assert not [n for n in names if n.endswith("libibqos.so") or "readback" in n], names
    assert "-py3-none-linux_" in wheel.name  # a plain shared library: any CPython 3, this platform


def test_the_installed_package_is_the_wheels_not_the_checkouts(host, venv):
    cp = host.python(
        "import ibqos, ibqos.paths as p, ibqos_sim.sim._core as c, importlib.util as u;"
        "print(ibqos.__file__, c.library_path(), p.templates_dir(), u.find_spec('matplotlib'))"
    )
    assert cp.returncode == 0, cp.stderr
    pkg, core, templates, mpl = cp.stdout.split()
    site = next((venv / "lib").glob("python3*/site-packages"))
    assert Path(pkg).is_relative_to(site) and Path(core) == site / CORE and Path(templates) == site / "ibqos/templates"
    assert mpl == "None"  # the plot extra is not installed
    cp = host("--help")  # loads every command's module
    assert cp.returncode == 0 and "simulate" in cp.stdout, cp.stderr


def test_the_c_tools_come_from_path_on_an_sm_host(host):
    """A wheel carries no ibqos-readback: `make install` puts it on PATH, where it is found
    (here the checkout's build, put on PATH as an installed one would be)."""
    tools = ROOT / "build/manager/readback"
    if not (tools / "ibqos-readback").exists():
        pytest.fail(f"{tools}/ibqos-readback is missing: run 'make build'")
    code = "import ibqos.paths as p; print(p.built('manager/readback/ibqos-readback'))"
    cp = host.python(code, path=f"{tools}{os.pathsep}/usr/bin:/bin")
    assert cp.returncode == 0 and cp.stdout.strip() == str(tools / "ibqos-readback"), cp.stderr
    cp = host.python(code)
    assert cp.returncode == 1 and cp.stderr.strip().splitlines()[-1].endswith(
        "ibqos-readback is not installed: 'make install' it from an ibqos checkout (README)"
    ), cp.stderr


def test_plan_analyze_render_and_simulate_from_the_wheel(host):
    shutil.copy(ROOT / "examples/four-class.yaml", host.dir / "policy.yaml")
    cp = host("plan", "policy.yaml", "-o", "plan.json", "--json")
    assert cp.returncode == 0, cp.stderr
    assert json.loads(cp.stdout)["CL"]["share"] == pytest.approx(50.0, abs=0.5)
    cp = host("analyze", "plan.json")
    assert cp.returncode == 0 and "per class" in cp.stdout, cp.stderr
    cp = host("render", "plan.json", "-o", "cfg")
    assert cp.returncode == 0, cp.stderr
    assert "routing_engine dla" in (host.dir / "cfg/opensm.conf").read_text()  # the packaged templates

    # the packaged C core, on a saved two-CA fabric: seed 002's config A gives SL3 6/70
    star(2, config_a()).save(host.dir / "fabric.json")
    cp = host("simulate", ".", "--traffic", "twonode", "--rate", "EDR", "--time-us", "1000")
    assert cp.returncode == 0, cp.stderr
    doc = json.loads((host.dir / "sim/twonode-0.80.json").read_text())
    shares = {c["sl"]: c["share_pct"] for c in doc["results"][0]["per_class"]}
    assert shares[3] == pytest.approx(100 * 6 / 70, abs=0.3)

    # a command that needs the missing extra says which one, before it runs anything
    cp = host("simulate", ".", "--traffic", "twonode", "--plot", "--out", "plots")
    assert cp.returncode == 2 and cp.stderr.strip().splitlines() == [
        "ibqos: error: --plot needs matplotlib: pip install 'ibqos[plot]'"
    ], cp.stderr
    assert not (host.dir / "plots").exists()


def test_the_sm_host_commands_need_no_simulator_core(host_alone, venv):
    """plan, analyze, render, verify and status on a wheel without its core (a host that only
    configures OpenSM); simulate then says, in one line, what is missing."""
    site = next((venv / "lib").glob("python3*/site-packages"))
    core = site / CORE
    aside = core.with_name("aside.so")
    core.rename(aside)
    try:
        shutil.copy(ROOT / "examples/two-class.yaml", host_alone.dir / "policy.yaml")
        star(2, config_a()).save(host_alone.dir / "fabric.json")
        (host_alone.dir / "p").mkdir()
        for args in (
            # the plan kept apart: `status .` would judge the saved fabric by a plan.json beside it
            ("plan", "policy.yaml", "-o", "p/plan.json"),
            ("analyze", "p/plan.json"),
            ("render", "p/plan.json", "-o", "cfg"),
            ("verify", "fabric.json", "--plan", "p/plan.json"),
            ("status", "."),
        ):
            cp = host_alone(*args)
            assert cp.returncode == 0, (args, cp.stdout, cp.stderr)
        cp = host_alone("simulate", ".", "--traffic", "twonode")
        lines = cp.stderr.strip().splitlines()
        assert cp.returncode == 3 and len(lines) == 1 and "libibqos_sim.so is not installed" in lines[0], cp.stderr
        assert str(core) in lines[0]
    finally:
        aside.rename(core)


def test_plan_analyze_and_render_need_no_numpy(host_alone, venv):
    """numpy stays a dependency (verify's channel dependency graph, and so apply and status,
    use it), but the commands that only turn a policy into files import neither it nor
    matplotlib: they run on a host where numpy is absent."""
    pip = [venv / "bin/python", "-m", "pip", "-q"]
    cp = _run([*pip, "uninstall", "-y", "numpy"], cwd=host_alone.dir)
    assert cp.returncode == 0, cp.stderr
    try:
        assert host_alone.python("import numpy").returncode == 1
        shutil.copy(ROOT / "examples/four-class.yaml", host_alone.dir / "policy.yaml")
        for args in (
            ("plan", "policy.yaml", "-o", "plan.json"),
            ("analyze", "plan.json"),
            ("render", "plan.json", "-o", "cfg"),
        ):
            cp = host_alone(*args)
            assert cp.returncode == 0, (args, cp.stdout, cp.stderr)
        assert (host_alone.dir / "cfg/opensm.conf").is_file()
        cp = host_alone("--help")  # every command listed, read without importing any
        assert cp.returncode == 0 and "plan " in cp.stdout and "verify " in cp.stdout, cp.stderr
        cp = host_alone("verify", "--help")  # a command that needs numpy says so when it is run
        assert cp.returncode == 3, (cp.stdout, cp.stderr)
        assert cp.stderr.strip() == "ibqos: error: verify cannot run here: No module named 'numpy'", cp.stderr
    finally:
        cp = _run([*pip, "install", "--no-index", "--find-links", WHEELHOUSE, "numpy"], cwd=host_alone.dir)
        assert cp.returncode == 0, cp.stderr
