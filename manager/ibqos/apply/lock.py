"""One `ibqos apply` (or recovering `ibqos status`) at a time per OpenSM configuration.

The lock file lives in the configuration's state directory, which is derived from the path
the admin gives (`confset.state_dir_for`), never from where its symlinks point: every apply
of one configuration meets the same lock. flock() is dropped by the kernel when the holder
dies, even by SIGKILL, so a crashed apply never leaves a stale lock (its journal says what it
left half-done)."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import ExternalError
from .confset import make_state_dir


def _quiet(line: str) -> None:
    pass


def _holder(fd: int) -> str:
    return os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"


LOCK_FILE = "apply.lock"  # in the state directory, beside the versions


@contextmanager
def apply_lock(state_dir: Path, *, timeout: float = 0, echo: Callable[[str], None] = _quiet) -> Iterator[None]:
    """Hold the lock of `state_dir`, waiting up to `timeout` seconds for another holder."""
    make_state_dir(state_dir)
    path = state_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        deadline = time.monotonic() + timeout
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ExternalError(
                        f"another ibqos apply (pid {_holder(fd)}) holds {path}"
                        + (f" (waited {timeout:g} s)" if timeout else "")
                    ) from None
                if not told:
                    echo(f"waiting for ibqos apply pid {_holder(fd)} to finish ({path})")
                    told = True
                time.sleep(0.1)
        os.ftruncate(fd, 0)
        try:
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:  # a full disk: the flock is the lock; the PID only names its holder
            pass
        yield
    finally:
        os.close(fd)  # closing drops the flock, also when the process is killed
