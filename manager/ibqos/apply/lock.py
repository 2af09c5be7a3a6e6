"""One `ibqos apply` (or recovering `ibqos status`) at a time per OpenSM configuration.

The lock file lives in the configuration's state directory, which is derived from the path
the admin gives (`confset.state_dir_for`), never from where its symlinks point: every apply
of one configuration meets the same lock. flock() is dropped by the kernel when the holder
dies, even by SIGKILL, so a crashed apply never leaves a stale lock (its journal says what it
left half-done); the file itself exists only while the lock is held (apply_lock)."""

from __future__ import annotations

import fcntl
import os
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
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
    Raises LockError, whatever kept it from being taken.

    The lock file exists only while it is held: the holder removes it before it lets go, and
    `state_dir` too when this lock made it and nothing else was written there (an apply refused
    before it wrote anything, on a configuration never applied). Before, every apply left
    apply.lock with its PID behind, and a refused first apply an ibqos.d/ holding only that:
    the PID of a process long gone, which reads as a crashed apply. A file left now is a
    killed holder's (SIGKILL, a crash), harmless: the kernel dropped its flock.

    A waiter leaves nothing it made either (_leave), and `made` is whether this process made
    `state_dir`, on any of its attempts: a waiter whose holder removed the fresh `state_dir` at
    its release makes it again, and before, refused or interrupted, left it empty."""
    path = state_dir / LOCK_FILE
    fd, made = _held(state_dir, path, timeout, echo)
    try:
        yield
    finally:
        # removed while still held, so a waiter locks an unlinked file and opens the path again
        with suppress(OSError):
            os.unlink(path)
        os.close(fd)  # closing drops the flock, also when the process is killed
        if made:
            with suppress(OSError):  # not empty: the apply wrote its versions there
                state_dir.rmdir()


def _held(state_dir: Path, path: Path, timeout: float, echo: Callable[[str], None]) -> tuple[int, bool]:
    """The lock file's descriptor, locked, with this process's PID in it, and whether this
    process made `state_dir`. A waiter whose holder removed the file at its release locked a
    file no longer at `path`: it opens the path again (the next holder's file, or a new one),
    so two never hold the lock at once."""
    deadline, told, made_dir = time.monotonic() + timeout, False, False
    while True:
        fd, made_file, made = _open(state_dir, path)
        made_dir = made_dir or made
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or a device: no file to write its PID in
                raise LockError(path, reason="not a regular file")
            told = _take(fd, path, (deadline, timeout), echo, told)
            if _is_at(fd, path):
                break
        except BaseException:
            _leave(fd, path, made_file, state_dir if made_dir else None)
            raise
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError:  # a full disk: the flock is the lock; the PID only names its holder
        pass
    return fd, made_dir


def _leave(fd: int, path: Path, made_file: bool, made_dir: Path | None) -> None:
    """A waiter stopped before it held the lock (a signal, its timeout) leaves what it made:
    its lock file, removed only under its flock and while still at `path`, as a holder
    removes it (a waiter blocked on it then opens the path again), and then `made_dir` if
    that is empty. A file another apply holds is not touched: that holder removes it at its
    release. The directory then stays when this waiter made it and the holder did not: to
    remove it the waiter would have to wait for that holder, which the signal told it not to."""
    try:
        if made_file:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if _is_at(fd, path):
                os.unlink(path)
    except OSError:  # held by another (BlockingIOError), or gone meanwhile
        return
    finally:
        os.close(fd)
    if made_dir is not None:
        with suppress(OSError):  # not empty: another apply's file or versions
            made_dir.rmdir()


def _open(state_dir: Path, path: Path) -> tuple[int, bool, bool]:
    """The lock file at `path`, made (with `state_dir`) when missing, and whether this call
    made the file and the directory. A holder that made `state_dir` removes it at its release:
    between the steps here it may be gone again, which is no reason to refuse."""
    for attempt in range(3):
        try:
            made_dir = not state_dir.is_dir()
            make_state_dir(state_dir)
            try:
                return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644), True, made_dir
            except FileExistsError:
                return os.open(path, os.O_RDWR | os.O_CLOEXEC), False, made_dir
        except FileNotFoundError as e:
            if attempt == 2:
                raise LockError(Path(e.filename or path), reason=e.strerror or str(e)) from e
        except OSError as e:
            raise LockError(Path(e.filename or path), reason=e.strerror or str(e)) from e
    raise AssertionError("unreachable")


def _is_at(fd: int, path: Path) -> bool:
    """Whether the file `fd` locked is still the one at `path`."""
    try:
        at = os.stat(path)
    except FileNotFoundError:
        return False
    st = os.fstat(fd)
    return (at.st_dev, at.st_ino) == (st.st_dev, st.st_ino)


def _take(fd: int, path: Path, until: tuple[float, float], echo: Callable[[str], None], told: bool) -> bool:
    """flock `fd`, waiting for its holder until `until` (the deadline, and the timeout it
    came from); whether the wait was said."""
    deadline, timeout = until
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return told
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockError(path, holder=_holder(fd), waited=timeout) from None
                if not told:
                    echo(f"waiting for ibqos apply pid {_holder(fd)} to finish ({path})")
                    told = True
                time.sleep(0.1)
    except OSError as e:  # a device or a filesystem without flock (ENOLCK) in its place
        raise LockError(path, reason=e.strerror or str(e)) from e
