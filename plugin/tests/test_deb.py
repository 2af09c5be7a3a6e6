"""`make deb`: the Debian package (debian/, debhelper) with the tool in its private environment,
the plugin, the C tools, the man pages and the bash completion. Its Depends are Debian 12
packages this machine has (apt-get's simulated install of the file), never Debian's pydantic;
unpacked (`dpkg -x`) and laid over / it runs in a clean environment like `make install`'s tree
(installed_root.py)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from dla_testlib import require_plugin
from installed_root import MULTIARCH, ROOT, check_installed_tool, require_private_root

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def deb() -> Path:
    require_plugin()
    for old in (ROOT / "build/deb").glob("ibqos_*.deb"):
        old.unlink()
    cp = subprocess.run(["make", "-s", "deb"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    (found,) = (ROOT / "build/deb").glob("ibqos_*.deb")
    return found


def _field(deb: Path, name: str) -> str:
    return subprocess.run(["dpkg-deb", "-f", str(deb), name], capture_output=True, text=True, check=True).stdout


def test_depends_are_debian_12_packages_and_satisfiable(deb):
    depends = {re.split(r"[ (]", d.strip())[0] for d in _field(deb, "Depends").split(",")}
    assert {"opensm", "infiniband-diags", "libibumad3", "python3.11"} <= depends, depends
    assert not [d for d in depends if d.startswith("python3-")], depends  # its Python libraries are its own
    cp = subprocess.run(
        ["apt-get", "install", "--simulate", "--no-install-recommends", f"./{deb.relative_to(ROOT)}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cp.returncode == 0, cp.stdout[-2000:] + cp.stderr
    assert re.search(r"^Inst ibqos ", cp.stdout, re.M), cp.stdout[-2000:]


def test_the_package_owns_its_files_and_etc_ibqos(deb):
    listing = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, check=True).stdout
    entries = {}
    for line in listing.splitlines():
        mode, owner, _size, _date, _time, path, *_link = line.split()
        entries[path] = (mode, owner)
    assert entries["./etc/ibqos/"] == ("drwxr-xr-x", "root/root")
    for path in (
        "./usr/bin/ibqos",
        "./usr/bin/ibqos-readback",
        "./usr/bin/ibqos-tablecheck",
        f"./usr/lib/{MULTIARCH}/libibqos.so.1.0.0",
        f"./usr/lib/{MULTIARCH}/libibqos.so",
        "./usr/lib/ibqos/pyvenv.cfg",
        "./usr/share/man/man1/ibqos.1.gz",
        "./usr/share/man/man1/ibqos-apply.1.gz",
        "./usr/share/bash-completion/completions/ibqos",
    ):
        assert path in entries, path
    assert entries["./usr/bin/ibqos"][0] == "-rwxr-xr-x"
    assert not [p for p in entries if p.startswith("./usr/lib/debug")]  # no debug files in the package


def test_the_unpacked_package_runs_in_a_clean_root(deb, tmp_path):
    require_private_root()
    tree = tmp_path / "root"
    subprocess.run(["dpkg", "-x", str(deb), str(tree)], check=True)
    work = tmp_path / "work"
    work.mkdir()
    check_installed_tool(tree, work)
