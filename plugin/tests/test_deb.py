"""`make deb`: the Debian package (debian/, debhelper) with the tool in its private environment,
the plugin, the C tools, the man pages and the bash completion. `apt-get install ./ibqos_*.deb`
installs it on a fresh Debian 12 (a minimal bookworm from debootstrap, in a chroot) and it runs
there; its Depends are Debian 12 packages, never Debian's pydantic. Unpacked (`dpkg -x`) and
laid over this machine's / it runs in a clean environment like `make install`'s tree
(installed_root.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from dla_testlib import require_plugin
from installed_root import (
    MULTIARCH,
    ROOT,
    check_installed_tool,
    make_in_checkout,
    project_version,
    require_private_root,
)

pytestmark = pytest.mark.slow

# The archive the fresh root comes from: this machine's (make deps installs from it too).
MIRROR = "http://deb.debian.org/debian"


def _make_deb(keep: Path) -> None:
    for old in (ROOT / "build/deb").glob("ibqos_*.deb"):
        old.unlink()
    cp = make_in_checkout("deb", timeout=600)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-3000:]
    (found,) = (ROOT / "build/deb").glob("ibqos_*.deb")
    shutil.copy(found, keep)


@pytest.fixture(scope="module")
def deb(once_per_run) -> Path:
    """The package `make deb` built in this checkout, once per run (once_per_run: the pytest
    workers never run it at the same time in the one checkout)."""
    require_plugin()
    (found,) = once_per_run("deb", _make_deb).glob("ibqos_*.deb")
    return found


def _field(deb: Path, name: str) -> str:
    return subprocess.run(["dpkg-deb", "-f", str(deb), name], capture_output=True, text=True, check=True).stdout


def test_depends_are_debian_12_packages_and_satisfiable(deb):
    depends = {re.split(r"[ (]", d.strip())[0] for d in _field(deb, "Depends").split(",")}
    assert {"opensm", "infiniband-diags", "libibumad3", "python3.11"} <= depends, depends
    assert not [d for d in depends if d.startswith("python3-")], depends  # its Python libraries are its own
    cp = subprocess.run(
        ["apt-get", "install", "--simulate", "--no-install-recommends", str(deb)],
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


@pytest.fixture(scope="module")
def fresh_debian(tmp_path_factory) -> Path:
    """A fresh Debian 12: `debootstrap --variant=minbase bookworm` (apt, dpkg and the essential
    packages, no Python, no OpenSM), its downloads cached in build/ for the next run."""
    if shutil.which("debootstrap") is None:
        pytest.fail("debootstrap is not installed: run 'make deps'")
    root = tmp_path_factory.mktemp("bookworm")
    cache = ROOT / "build/debootstrap-cache"
    cache.mkdir(parents=True, exist_ok=True)
    cp = subprocess.run(
        ["debootstrap", "--variant=minbase", f"--cache-dir={cache}", "bookworm", str(root), MIRROR],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-2000:]
    # no service starts in the chroot while apt installs opensm
    (root / "usr/sbin/policy-rc.d").write_text("#!/bin/sh\nexit 101\n")
    (root / "usr/sbin/policy-rc.d").chmod(0o755)
    return root


def test_apt_installs_the_package_on_a_fresh_debian_12(deb, fresh_debian):
    shutil.copy(deb, fresh_debian / "tmp" / deb.name)
    shutil.copy(ROOT / "examples/two-class.yaml", fresh_debian / "tmp/policy.yaml")
    inside = (
        "set -e; apt-get update -qq; "
        f"apt-get install -y -qq --no-install-recommends /tmp/{deb.name} >/tmp/apt.log 2>&1 "
        "|| { tail -20 /tmp/apt.log; exit 1; }; "
        "cd /tmp; ibqos --version; ibqos plan policy.yaml -o plan.json >/dev/null; "
        "ibqos status --help | head -1; dpkg -S /etc/ibqos /usr/bin/ibqos; ls /usr/share/man/man1/ibqos-plan.1.gz"
    )
    enter = (
        'mount -t proc proc "$1/proc"; cp /etc/resolv.conf "$1/etc/resolv.conf"; '
        'exec chroot "$1" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive sh -c "$2"'
    )
    cp = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", enter, "sh", str(fresh_debian), inside],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-2000:]
    assert cp.stdout.splitlines()[:4] == [
        f"ibqos, version {project_version()}",
        "Usage: ibqos status [OPTIONS] [RUNDIR]",
        "ibqos: /etc/ibqos",
        "ibqos: /usr/bin/ibqos",
    ], cp.stdout
    assert (fresh_debian / "tmp/plan.json").is_file()
