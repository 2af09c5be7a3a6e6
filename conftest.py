"""Fixtures shared by every test directory.

`ibqos_cli` is the suite's one way to run the `ibqos` command.

`no_leaked_processes` (autouse) fails any test after which a process it started is still
alive: children of this pytest process, and anything attached to a fabric whose
IBSIM_SOCKNAME this process created (the harness embeds our PID in it).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from ibqos.proc import proc_stat, run_command
from ibqos_sim.harness import Harness, sock_prefix_for

# pytest-xdist's workers (make test runs two) get COLUMNS=80 and LINES=24, which every ibqos
# they start would take as the terminal's size: outputs would wrap otherwise than in one process.
if "PYTEST_XDIST_WORKER" in os.environ:
    for _name in ("COLUMNS", "LINES"):
        os.environ.pop(_name, None)


def _ours() -> dict[int, str]:
    me = os.getpid()
    prefix = sock_prefix_for(me).encode()
    found = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == me:
            continue
        st = proc_stat(int(d.name))
        if st is None or st[0] == "Z":
            continue
        ppid = st[1]
        try:
            environ = (d / "environ").read_bytes()
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if ppid == me or b"IBSIM_SOCKNAME=" + prefix in environ:
            found[int(d.name)] = cmd.strip()
    return found


@pytest.fixture(autouse=True)
def no_leaked_processes():
    before = set(_ours())
    yield
    deadline = time.monotonic() + 5
    leaked = {}
    while time.monotonic() < deadline:
        leaked = {p: c for p, c in _ours().items() if p not in before}
        if not leaked:
            return
        time.sleep(0.1)
    for pid in leaked:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    pytest.fail(f"processes started by this test are still running: {leaked}")


def _left_half_written(root: Path) -> list[str]:
    """What an interrupted ibqos must never leave under `root`: temp files (write_atomic's
    `.NAME.xxxx`, a version's `.vNNNN.tmp`, a symlink's `.NAME.lnkPID`, the plugin's
    `ibqos-dla.json.tmp`) and JSON or PNG outputs that are not whole."""
    bad = []
    for p in Path(root).rglob("*"):
        if p.name.startswith(".") or p.name.endswith(".tmp"):
            bad.append(f"{p}: temp file left")
        elif p.suffix == ".json" and p.is_file():
            try:
                json.loads(p.read_text())
            except ValueError as e:
                bad.append(f"{p}: not whole JSON ({e})")
        elif p.suffix == ".png" and p.is_file() and not p.read_bytes().endswith(b"IEND\xaeB`\x82"):
            bad.append(f"{p}: not a whole PNG")
    return bad


@pytest.fixture
def half_written():
    """`half_written(root)`: the temp files and partial outputs left under root (want [])."""
    return _left_half_written


@pytest.fixture
def ibsim_fabric(tmp_path):
    """The ibsim harness for tests: `ibsim_fabric(net, run_dir=None, **options)` is a Harness
    (ci-sim/ibqos_sim/harness, options as Harness takes them; run_dir defaults to a fresh
    directory under tmp_path), used as `with ibsim_fabric(net) as h:`, started there and stopped
    at the block's end. Whatever a test leaves running is stopped by PID when it ends, pass or
    fail."""
    made: list[Harness] = []

    def make(net, run_dir=None, **options) -> Harness:
        h = Harness(net, run_dir=run_dir or tmp_path / f"fabric{len(made)}", **options)
        made.append(h)
        return h

    yield make
    for h in made:
        h.stop()


class IbqosCli:
    """`ibqos_cli(*args)`: the `ibqos` console script of this venv in a child process, as users
    run it, through ibqos.proc.run_command (its own session, killed by process group on
    timeout, stdin closed unless `input` is given); output captured as text, the exit code
    left to the test. `argv` is the command alone, for a test that must hold the process
    itself (Popen, signals)."""

    argv = (str(Path(sys.executable).parent / "ibqos"),)

    def __call__(
        self,
        *args: object,
        cwd: str | Path | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 300,
        input: str | None = None,
    ) -> subprocess.CompletedProcess:
        return run_command([*self.argv, *map(str, args)], cwd=cwd, env=env, timeout=timeout, check=False, input=input)


@pytest.fixture(scope="session")
def ibqos_cli() -> IbqosCli:
    return IbqosCli()


@pytest.fixture(scope="session")
def once_per_run(tmp_path_factory):
    """`once_per_run(name, make)`: the directory `make(directory)` filled, made once in this
    run for all its pytest-xdist workers (make test runs two, and a module's tests are dealt to
    both: a module-scoped fixture ran once in each, e.g. `make deb` twice at once in one
    checkout). The first worker to ask makes it while holding a lock; the others wait and use
    it. Only for what the tests read: a test that changes it makes its own."""
    base = tmp_path_factory.getbasetemp()
    if "PYTEST_XDIST_WORKER" in os.environ:
        base = base.parent  # the run's directory, above each worker's own
    cache: dict[str, Path] = {}

    def get(name: str, make: Callable[[Path], None]) -> Path:
        if name in cache:
            return cache[name]
        d = base / f"once-{name}"
        with open(base / f"once-{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (base / f"once-{name}.done").exists():
                shutil.rmtree(d, ignore_errors=True)  # a worker's failed attempt
                d.mkdir()
                make(d)
                (base / f"once-{name}.done").touch()
        cache[name] = d
        return d

    return get
