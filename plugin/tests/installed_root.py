"""An installed ibqos (a `make install DESTDIR=` tree, or a .deb unpacked with `dpkg -x`) as an
SM host would have it, without touching this machine: a private mount namespace in which /usr
and /etc are read-only overlays of the tree's files on the host's, and a clean environment
(`env -i PATH=/usr/bin:/bin`). Used by test_install.py and test_deb.py, which check both forms
with the same assertions (check_installed_tool)."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MULTIARCH = (
    subprocess.run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"], capture_output=True, text=True).stdout.strip()
    or "x86_64-linux-gnu"
)
# The overlays, then the command with nothing of this environment: $1 the tree, $2 the cwd.
_ENTER = (
    'set -e; tree=$1 cwd=$2; shift 2; for d in usr etc; do if [ -d "$tree/$d" ]; then '
    'mount -t overlay overlay -o "lowerdir=$tree/$d:/$d" "/$d"; fi; done; '
    'cd "$cwd"; exec env -i PATH=/usr/bin:/bin "$@"'
)


def make_in_checkout(target: str, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """`make TARGET` in the checkout with build/'s own -Werror setting (its CMakeCache.txt), so
    the build it depends on finds nothing to do. With another setting (`make test` builds with
    WERROR=ON, a bare make has OFF) CMake reconfigured and relinked every library in build/
    while the tests of the other pytest worker were loading them (the clean clone's CI at
    55ace53: a dry run's simulator failed to load, 'ibqos: error: : None'). One make at a time
    in the checkout: `make install` and `make deb` (which runs it) both rewrite build/cli-docs/."""
    cache = (ROOT / "build" / "CMakeCache.txt").read_text()
    werror = re.search(r"^IBQOS_WERROR:BOOL=(\w+)$", cache, re.M)
    options = [f"WERROR={werror.group(1)}"] if werror else []
    with open(ROOT / "build" / ".make-in-checkout.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return subprocess.run(
            ["make", "-s", target, *options, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
        )


def require_private_root() -> None:
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-m", "true"]).returncode:
        pytest.skip("no private mount namespace (unshare -m) here")


def run_in_root(tree: Path, cwd: Path, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", _ENTER, "sh", str(tree), str(cwd), *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def project_version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def locked_versions(lock: Path) -> dict[str, str]:
    """name -> version pinned in a requirements lock (requirements/*.txt)."""
    return {m[1]: m[2] for m in re.finditer(r"^([a-z0-9_.-]+)==(\S+)", lock.read_text(), re.M)}


def check_installed_tool(tree: Path, work: Path) -> None:
    """What an admin does first on the SM host, from the tree laid over /: the version, a plan,
    status's help, the man pages and the completion; the tool runs on its private environment
    with the runtime lock's versions; OpenSM's dlopen("libibqos.so") finds the plugin."""
    cp = run_in_root(tree, work, "ibqos", "--version")
    assert cp.returncode == 0 and cp.stdout.strip() == f"ibqos, version {project_version()}", cp.stdout + cp.stderr

    shutil.copy(ROOT / "examples/two-class.yaml", work / "policy.yaml")
    cp = run_in_root(tree, work, "ibqos", "plan", "policy.yaml", "-o", "plan.json")
    assert cp.returncode == 0, cp.stderr
    assert '"classes"' in (work / "plan.json").read_text()
    cp = run_in_root(tree, work, "ibqos", "render", "plan.json", "-o", "cfg")  # the installed templates
    assert cp.returncode == 0, cp.stderr
    assert "routing_engine dla" in (work / "cfg/opensm.conf").read_text()
    cp = run_in_root(tree, work, "ibqos", "status", "--help")
    assert cp.returncode == 0 and cp.stdout.startswith("Usage: ibqos status"), cp.stderr

    # the private environment: the lock's versions, none of the system's (or this venv's) packages
    code = (
        "import sys, importlib.metadata as m, ibqos, ibqos.paths as p;"
        "print(sys.prefix, ibqos.__file__, m.version('pydantic'), m.version('click'), m.version('numpy'));"
        "print(p.product('manager/readback/ibqos-readback'), p.plugin_dir(), p.templates_dir());"
        "print(*[d for d in sys.path if 'dist-packages' in d or '.venv' in d])"
    )
    cp = run_in_root(tree, work, "/usr/lib/ibqos/bin/python", "-I", "-c", code)
    assert cp.returncode == 0, cp.stderr
    lines = cp.stdout.splitlines()
    prefix, pkg, *versions = lines[0].split()
    lock = locked_versions(ROOT / "requirements/runtime.txt")
    assert prefix == "/usr/lib/ibqos" and pkg.startswith("/usr/lib/ibqos/lib/python3")
    assert versions == [lock["pydantic"], lock["click"], lock["numpy"]]
    assert lines[1].split() == ["/usr/bin/ibqos-readback", f"/usr/lib/{MULTIARCH}", "/usr/share/ibqos/templates"]
    assert len(lines) == 2 or not lines[2].strip(), lines[2]
    # the compiled modules are used as installed (the overlay is read-only, as /usr may be)
    cp = run_in_root(tree, work, "/usr/lib/ibqos/bin/python", "-I", "-v", "-c", "import ibqos_app.cli._main, pydantic")
    assert cp.returncode == 0 and "code object from '/usr/lib/ibqos/" in cp.stderr, cp.stderr[-2000:]
    assert "bytecode is stale" not in cp.stderr and "matches /usr/lib/ibqos/" in cp.stderr, cp.stderr[-2000:]

    # the plugin where OpenSM loads it: OpenSM dlopen()s "lib<event_plugin_name>.so" by name
    dl = "import ctypes, os; ctypes.CDLL('libibqos.so', os.RTLD_LAZY); print(open('/proc/self/maps').read())"
    cp = run_in_root(tree, work, "python3", "-c", dl)
    assert cp.returncode == 0, cp.stderr
    assert f"/usr/lib/{MULTIARCH}/libibqos.so.1.0.0" in cp.stdout

    # one man page per command, found by man; the completion completes from the installed tool
    cp = run_in_root(tree, work, "man", "-w", "ibqos", "ibqos-plan", "ibqos-fabric-up")
    assert cp.returncode == 0, cp.stderr
    assert [Path(p).name.split(".")[0] for p in cp.stdout.split()] == ["ibqos", "ibqos-plan", "ibqos-fabric-up"]
    cp = run_in_root(tree, work, "man", "-P", "cat", "ibqos-plan")
    assert cp.returncode == 0 and "--output" in cp.stdout.replace("\u2010", "-"), cp.stdout[-2000:] + cp.stderr
    complete = (
        ". /usr/share/bash-completion/completions/ibqos;"
        "COMP_WORDS=(ibqos pla); COMP_CWORD=1; _ibqos_completion ibqos; echo ${COMPREPLY[@]}"
    )
    cp = run_in_root(tree, work, "bash", "-c", complete)
    assert cp.returncode == 0 and cp.stdout.split() == ["plan"], cp.stdout + cp.stderr

    # /etc/ibqos for policies and plans, as root keeps it
    st = os.stat(tree / "etc/ibqos")
    assert oct(st.st_mode & 0o7777) == "0o755"
