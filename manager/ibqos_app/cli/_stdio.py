"""The standard streams every command writes to, set up once by cli._main before it runs.
Whatever becomes of them, a command's exit code stays its verdict.

- A descriptor 0-2 closed at start (`ibqos status >&-`, a daemon's or a cron job's context)
  gets /dev/null: Python leaves sys.stdout None there (the first table printed was an internal
  error, exit 70), and the first file ibqos opened would have become fd 1, the output of a
  child process with it.
- A reader gone (`ibqos status | head -1`, a pager quit, a restarted journal) discards the
  rest of the output and the command runs to its end: click's and rich's handlers of the
  broken pipe exited 1, ibqos's code for a defect found, and stopped a dry run, an apply or
  the monitor half-way.
- A command that runs until stopped (`ibqos monitor`) stops when the reader is gone instead:
  `ibqos monitor --listen … | head -1` ran on forever, nobody reading and the shell waiting.
  It pauses in `pause()`, which ends early, raising ReaderGone, once a write found the reader
  gone or stdout is a pipe or socket whose other end closed (poll: POLLERR, POLLHUP), though
  nothing was written since; the CLI exits 141 (128+SIGPIPE, as a writer SIGPIPE kills), quietly.
- Output is line-buffered: a pipe or a log file gets each line as it is printed (apply's
  steps, a long dry run), not a block at exit: an admin tails it, and a killed run keeps what
  it said.
- A character stdout's encoding lacks (a Latin-1 or ASCII terminal: a legacy locale,
  PYTHONIOENCODING) is printed as '?': the first 'µ' or '→' was an internal error, exit 70.
  --json output is ASCII and files are written as UTF-8: only what a person reads changes.
"""

from __future__ import annotations

import io
import locale
import os
import select
import signal
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer


READER_GONE_EXIT = 128 + signal.SIGPIPE


class ReaderGone(Exception):  # noqa: N818 - not an error: how a command that runs until stopped ends
    """Standard output's reader went away (pause)."""


class _Discarding(io.BufferedWriter):
    """A standard stream's bytes; once a write finds the reader gone, /dev/null takes the
    descriptor and the rest. The text layer above calls these for every line it flushes.
    Another failure of stdout (a full disk under `> file`) is the error it is, naming the
    stream; what is left buffered goes to /dev/null, not to the flush at exit (Python's
    'Exception ignored', exit 120). stderr cannot say its own failure: the exit code does."""

    def __init__(self, raw: io.FileIO, name: str | None) -> None:
        super().__init__(raw)
        self.shown = name  # None: discard on any failure
        self.gone = False  # a write found the reader gone

    def write(self, b: ReadableBuffer, /) -> int:
        try:
            return super().write(b)
        except OSError as e:
            self._failed(e)
            return memoryview(b).nbytes

    def flush(self) -> None:
        try:
            super().flush()
        except OSError as e:
            self._failed(e)

    def _failed(self, e: OSError) -> None:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, self.fileno())
        os.close(null)
        super().flush()  # what was buffered goes to /dev/null
        if isinstance(e, BrokenPipeError):
            self.gone = True
        elif self.shown is not None:
            raise OSError(e.errno, e.strerror, self.shown) from e


def pause(seconds: float) -> None:
    """time.sleep(seconds), ended by ReaderGone as soon as standard output's reader is gone."""
    deadline = time.monotonic() + seconds
    poll = select.poll()
    poll.register(1, 0)  # no events asked for: POLLERR and POLLHUP are reported all the same
    out = getattr(sys.stdout, "buffer", None)  # a test's captured stdout is no _Discarding
    while True:
        if isinstance(out, _Discarding) and out.gone:
            raise ReaderGone
        left = deadline - time.monotonic()
        if left <= 0:
            return
        # a pipe without a reader: POLLERR; a socket whose peer closed: POLLHUP; a file, a
        # terminal or /dev/null: nothing, the whole pause
        if any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poll.poll(left * 1000)):
            raise ReaderGone


def _stream(fd: int, old: io.TextIOBase | None, errors: str) -> io.TextIOWrapper:
    encoding = getattr(old, "encoding", None) or locale.getpreferredencoding(False)
    raw = io.FileIO(fd, "w", closefd=False)
    name = "standard output" if fd == 1 else None
    return io.TextIOWrapper(_Discarding(raw, name), encoding=encoding, errors=errors, line_buffering=True)


def prepare() -> None:
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)  # the lowest free descriptor: fd itself
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    # the process's own streams only: a test's captured ones are left as they are
    if sys.stdout is None or sys.stdout is sys.__stdout__:
        sys.stdout = _stream(1, sys.stdout, "replace")
    if sys.stderr is None or sys.stderr is sys.__stderr__:
        sys.stderr = _stream(2, sys.stderr, "backslashreplace")  # Python's own: an error line stays exact
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(line_buffering=True)
