"""The credit-loop verdict `ibqos monitor --verdict FILE` exports: the file `ibqos status --live
--verdict FILE` keeps (ibqos.verdict), read again only when it changed. No file yet (the first
`status` has not run) is no verdict, not an error.

A file that is not a verdict is bad input at start (the caller exits 2). Replaced by one
during a run (hand-edited, another tool's), it is no verdict from then on, not the last good
one: the metric never claims a verdict the file does not give. The monitor keeps sampling,
says the error once per change of the file, and `unreadable` is what it exports, so that an
alert fires where the stale-verdict alert (on the file's `read_at`) no longer can."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..errors import InputError
from ..verdict import Verdict, load_verdict
from .engine import SaidOnce, Stamp, stamp


class VerdictWatch:
    def __init__(self, path: Path | None, warn: Callable[[str], None]):
        self.path, self._said = path, SaidOnce(warn)
        self._stamp: Stamp | bool | None = None  # False: the file could not be looked at
        self._verdict: Verdict | None = None
        self.unreadable = False

    def start(self) -> None:
        """The first read: a file that is not a verdict raises its InputError (exit 2)."""
        if self.path is not None and (now := stamp(self.path)) is not None:
            self._verdict, self._stamp = load_verdict(self.path), now

    def verdict(self) -> Verdict | None:
        if self.path is None:
            return None
        try:
            now = stamp(self.path)  # a FIFO or a directory put there, a directory closed to us
        except InputError as e:
            self._verdict, self.unreadable, self._stamp = None, True, False
            self._said(e)
            return None
        if now != self._stamp:
            self._stamp = now
            self._said(None)  # another file: its error is said again
            try:
                self._verdict = load_verdict(self.path) if now is not None else None
                self.unreadable = False
            except InputError as e:
                self._verdict, self.unreadable = None, True
                self._said(e)
        return self._verdict
