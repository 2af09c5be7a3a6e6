"""Samples that fail while `ibqos monitor --listen` serves (docs/monitor.md, "When the fabric
does not answer"). An exporter under systemd that ended with exit 3 at the first read-back
that failed (this host's port down for a moment, ibsim or the fabric gone) took every metric
with it until someone restarted it, and a unit with Restart= looped on a fabric still down.
It serves on, exports the failure, and says one line when sampling starts failing and one
when it works again: not one per sample, which filled the journal at every interval of an
outage."""

from __future__ import annotations

import time
from collections.abc import Callable

from ..errors import ExternalError, one_line


class Outage:
    def __init__(self, warn: Callable[[str], None], interval: float):
        self._warn, self._interval = warn, interval
        self.since: float | None = None  # monotonic clock at the first failed sample of this outage
        self.failed = 0  # samples failed in it
        self.error: ExternalError | None = None  # the last one's, while it lasts

    def fail(self, error: ExternalError) -> None:
        if self.since is None:
            self.since = time.monotonic()
            self._warn(
                f"ibqos: sampling failed: {one_line(str(error))}; serving on "
                f"(ibqos_monitor_last_sample_success 0), sampling again every {self._interval:g} s"
            )
        self.failed += 1
        self.error = error

    def ok(self) -> None:
        if self.since is not None:
            took = time.monotonic() - self.since
            self._warn(f"ibqos: sampling works again, after {self.failed} failed over {took:.0f} s")
        self.since, self.failed, self.error = None, 0, None
