"""One `ibqos apply` (or recovering `ibqos status`) at a time per OpenSM configuration.

The lock file lives in the configuration's state directory, which is derived from the path
the admin gives (`confset.state_dir_for`), never from where its symlinks point: every apply
of one configuration meets the same lock. flock() is dropped by the kernel when the holder
dies, even by SIGKILL, so a crashed apply never leaves a stale lock (its journal says what it
left half-done)."""

from __future__ import annotations

import fcntl
import os
import stat
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


class LockError(ExternalError):
    """The apply lock of a configuration was not taken: another apply holds it (`holder`, its
    PID as it wrote it), or the lock file cannot be made or locked (`reason`: a read-only or
    foreign /etc, a FIFO or another non-file in its place, a filesystem without flock)."""

    def __init__(self, path: Path, *, holder: str | None = None, reason: str | None = None, waited: float = 0):
        self.path, self.holder, self.reason = path, holder, reason
        if holder is not None:
            msg = f"another ibqos apply (pid {holder}) holds {path}" + (f" (waited {waited:g} s)" if waited else "")
        else:
            msg = f"{path}: {reason}: cannot take the apply lock"
        super().__init__(msg)


@contextmanager
def apply_lock(state_dir: Path, *, timeout: float = 0, echo: Callable[[str], None] = _quiet) -> Iterator[None]:
    """Hold the lock of `state_dir`, waiting up to `timeout` seconds for another holder.
    Raises LockError, whatever kept it from being taken."""
    path = state_dir / LOCK_FILE
    try:
        make_state_dir(state_dir)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise LockError(Path(e.filename or path), reason=e.strerror or str(e)) from e
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or a device: no file to write its PID in
            raise LockError(path, reason="not a regular file")
        _take(fd, path, timeout, echo)
        yield
    finally:
        os.close(fd)  # closing drops the flock, also when the process is killed


def _take(fd: int, path: Path, timeout: float, echo: Callable[[str], None]) -> None:
    try:
        deadline = time.monotonic() + timeout
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockError(path, holder=_holder(fd), waited=timeout) from None
                if not told:
                    echo(f"waiting for ibqos apply pid {_holder(fd)} to finish ({path})")
                    told = True
                time.sleep(0.1)
        os.ftruncate(fd, 0)
    except OSError as e:  # a FIFO, a device or a filesystem without flock (ENOLCK) in its place
        raise LockError(path, reason=e.strerror or str(e)) from e
    try:
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError:  # a full disk: the flock is the lock; the PID only names its holder
        pass
