"""SIGINT, SIGTERM and SIGHUP, handled alike: the one place ibqos turns a signal into an exception.

`timeout`, Slurm and systemd stop a command with SIGTERM, a closed terminal sends SIGHUP; by
default Python dies of either at once, without running a single `finally`, so a dry run's
ibsim and OpenSM lived on, reparented to PID 1. With `install()` (the CLI's entry does it)
each of the three raises `Interrupted` (a KeyboardInterrupt) where the program is: the
`finally` blocks and context managers stop every child by PID, writers are atomic
(docfile.write_atomic), and the CLI exits 128+N.

A second signal while the first one unwinds is ignored: cleanup is bounded (a daemon gets
seconds to stop, then SIGKILL) and must not be cut short half-way. `deferred()` holds signals
for a block that must finish whole (apply's rollback) and raises once it has.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A signal asked ibqos to stop; `exit_code` is the shell's 128+N."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


_received: list[int] = []  # the first signal, once one came
_held = [0]  # depth of deferred() blocks


def _handler(signum: int, frame: FrameType | None) -> None:
    if _received:
        return  # already stopping: let the cleanup finish
    _received.append(signum)
    if not _held[0]:
        raise Interrupted(signum)


def install() -> None:
    """In the main thread only: Python delivers signals there (a command run in a thread, as
    some tests do, keeps the default handlers)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for s in SIGNALS:
        # an ignored signal stays ignored: `nohup ibqos dryrun …` must outlive its terminal,
        # and a shell's background job ignores SIGINT
        if signal.getsignal(s) != signal.SIG_IGN:
            signal.signal(s, _handler)


def reset_in_child() -> None:
    """For forked workers: the parent decides and stops them by PID; a terminal's Ctrl-C,
    which reaches the whole process group, must not make each of them raise on its own."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def pending() -> int | None:
    """The signal that came, if one did."""
    return _received[0] if _received else None


@contextmanager
def held() -> Iterator[None]:
    """Signals that arrive inside the block wait for its end, without being raised there: the
    caller looks at `pending()` and decides (proc's spawn kills the child it just made)."""
    _held[0] += 1
    try:
        yield
    finally:
        _held[0] -= 1


@contextmanager
def deferred() -> Iterator[None]:
    """Signals that arrive inside the block are held until it ends, then raised."""
    with held():
        yield
    if not _held[0] and _received:
        raise Interrupted(_received[0])
