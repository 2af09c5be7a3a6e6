"""One `ibqos apply` at a time per OpenSM configuration."""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path

from ..errors import ExternalError


@contextmanager
def apply_lock(state_dir: Path):
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / "apply.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise ExternalError(f"another ibqos apply (pid {holder}) holds {path}") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)      # closing drops the flock, also when the process is killed
