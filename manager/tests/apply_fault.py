"""Test-only: `ibqos` with every Apply's hook set to SIGKILL this process at one point, for the
kill -9 recovery tests (apply_helpers.run_apply(fault=...)). The product has no fault switch:
this wrapper gives the real `ibqos apply` process the hook Apply takes (apply.run), then runs
the CLI as the console script does.

    python apply_fault.py POINT ibqos-args...

POINT is a step name (killed as the step starts) or `journal:<state>` (killed right after the
journal says <state>, "journal:rollback" included). `logrotate@POINT` rotates OpenSM's log
there instead, as Debian's /etc/logrotate.d/opensm does, and the apply goes on.
`pause@POINT` stops the apply there until the test says go: it creates `paused` in the
directory $APPLY_FAULT_PAUSE and waits for `go` there (the test changes the fabric meanwhile).
`raise@POINT` raises KeyError('injected at POINT') there: a bug in ibqos, not a kill."""

from __future__ import annotations

import gzip
import os
import shutil
import signal
import sys
import time
from pathlib import Path

from ibqos_app.apply.run import Apply
from ibqos_app.cli import main


def _kill_at(point: str):
    def hook(at: str) -> None:
        if at == point:
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


def _rotate_at(point: str, apply: Apply):
    """Debian's stanza (rotate, compress, postrotate `killall -SIGUSR1 opensm`): the log is
    renamed, OpenSM reopens its log_file on SIGUSR1, and the old file is compressed and removed."""

    def hook(at: str) -> None:
        if at != point:
            return
        log = apply.s.log
        old = log.with_name(log.name + ".1")
        os.rename(log, old)
        os.kill(apply.s.pid, signal.SIGUSR1)
        deadline = time.monotonic() + 30
        while not log.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        with old.open("rb") as f, gzip.open(f"{old}.gz", "wb") as g:
            shutil.copyfileobj(f, g)
        old.unlink()

    return hook


def _pause_at(point: str):
    def hook(at: str) -> None:
        if at != point:
            return
        where = Path(os.environ["APPLY_FAULT_PAUSE"])
        (where / "paused").touch()
        while not (where / "go").exists():
            time.sleep(0.1)

    return hook


def _raise_at(point: str):
    def hook(at: str) -> None:
        if at == point:
            raise KeyError(f"injected at {point}")

    return hook


if __name__ == "__main__":
    point, argv = sys.argv[1], sys.argv[2:]
    init = Apply.__init__

    def with_fault(self, req, echo=print, hook=None):
        if point.startswith("logrotate@"):
            init(self, req, echo, _rotate_at(point.removeprefix("logrotate@"), self))
        elif point.startswith("raise@"):
            init(self, req, echo, _raise_at(point.removeprefix("raise@")))
        elif point.startswith("pause@"):
            init(self, req, echo, _pause_at(point.removeprefix("pause@")))
        else:
            init(self, req, echo, _kill_at(point))

    Apply.__init__ = with_fault  # type: ignore[method-assign]
    main(argv)
