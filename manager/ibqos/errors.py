"""Typed errors. The CLI maps them to one stderr line and an exit code (cli/_main.py).

Exit codes used across ibqos:
  0  success / clean verdict
  1  a defect was found (verification failed, SLA missed, deadlock)
  2  unusable input (bad file, bad option, infeasible policy)
  3  an external component failed (ibsim, OpenSM, a diags tool, apt)
 70  a bug in ibqos (one line; `ibqos -v` shows the traceback)
"""

from __future__ import annotations

import re
from pathlib import Path


def one_line(text: str) -> str:
    """`text` with its line breaks written as \\n and \\r: a file name may hold one, and the
    error about it must stay one line. A byte of a file name that is not UTF-8 (Python's
    surrogate escape) is written as \\xNN, as the shell's $'...' names it."""
    text = re.sub("[\udc80-\udcff]", lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", text)
    return text.replace("\r", "\\r").replace("\n", "\\n")


class IbqosError(Exception):
    exit_code = 2


class InputError(IbqosError):
    """Bad input. Formats as `file:line: field: message` with the parts that are known."""

    def __init__(
        self, message: str, *, file: str | Path | None = None, line: int | None = None, field: str | None = None
    ):
        self.file, self.line, self.field, self.detail = file, line, field, message
        where = ""
        if file is not None:
            shown = one_line(str(file))
            where = f"{shown}:{line}: " if line is not None else f"{shown}: "
        if field:
            where += f"{field}: "
        super().__init__(where + message)


class InfeasibleError(IbqosError):
    """The policy is well-formed but no table set can meet it."""


class ExternalError(IbqosError):
    exit_code = 3


class ProcessError(ExternalError):
    """A child process failed. Carries the command, exit code and the tail of its output."""

    def __init__(self, message: str, *, cmd: list[str] | None = None, returncode: int | None = None, output: str = ""):
        self.cmd, self.returncode, self.output = cmd, returncode, output
        super().__init__(message)


class VerificationFailed(IbqosError):
    exit_code = 1


class InternalError(IbqosError):
    """A bug met where ibqos must still leave one whole state (apply after its swap): said as
    bug_line says it, the bug its cause; the CLI prints one line, exit 70, as for any other."""

    exit_code = 70


def bug_line(e: BaseException) -> str:
    """The one line a bug in ibqos is said in (`ibqos -v` shows the traceback)."""
    return f"{type(e).__name__}: {one_line(str(e))} (this is a bug in ibqos; 'ibqos -v ...' shows where)"
