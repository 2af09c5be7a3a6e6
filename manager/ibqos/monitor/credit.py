"""The credit-loop verdict `ibqos monitor --verdict FILE` exports: the file `ibqos status --live
--verdict FILE` keeps (ibqos.verdict), read again only when it changed. No file yet (the first
`status` has not run) is no verdict, not an error."""

from __future__ import annotations

from pathlib import Path

from ..verdict import Verdict, load_verdict
from .engine import Stamp, stamp


class VerdictWatch:
    def __init__(self, path: Path | None):
        self.path = path
        self._stamp: Stamp | None = None
        self._verdict: Verdict | None = None

    def verdict(self) -> Verdict | None:
        if self.path is None:
            return None
        now = stamp(self.path)
        if now != self._stamp:
            self._verdict = load_verdict(self.path) if now is not None else None
            self._stamp = now
        return self._verdict
