"""Test-only: `ibqos` with every Apply's hook set to SIGKILL this process at one point, for the
kill -9 recovery tests (apply_helpers.run_apply(fault=...)). The product has no fault switch:
this wrapper gives the real `ibqos apply` process the hook Apply takes (apply.run), then runs
the CLI as the console script does.

    python apply_fault.py POINT ibqos-args...

POINT is a step name (killed as the step starts) or `journal:<state>` (killed right after the
journal says <state>, "journal:rollback" included)."""

from __future__ import annotations

import os
import signal
import sys

from ibqos_app.apply.run import Apply
from ibqos_app.cli import main


def _kill_at(point: str):
    def hook(at: str) -> None:
        if at == point:
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


if __name__ == "__main__":
    point, argv = sys.argv[1], sys.argv[2:]
    init = Apply.__init__

    def with_fault(self, req, echo=print, hook=None):
        init(self, req, echo, _kill_at(point))

    Apply.__init__ = with_fault  # type: ignore[method-assign]
    main(argv)
