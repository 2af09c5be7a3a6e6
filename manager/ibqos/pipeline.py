"""One driver for a run made of named stages: the dry run (ibqos_app.dryrun) and apply
(ibqos.apply). ReFrame-style (reframe/core/pipeline.py): the stages are one tuple of names,
each a small method `stage_<name>` of the run that only calls named steps; the driver only
sequences them, times them and calls the hooks. It decides nothing: a stage that finds a
defect raises (VerificationFailed, exit 1), and the exception leaves the driver unchanged,
cause attached, for the one place that maps exceptions to exit codes (ibqos_app.cli).

Hooks, all optional:
- progress(stage, fraction): 0.0 as a stage starts, 1.0 when it ends (a long stage may report
  in between through the same callback);
- before(stage): runs first, before the stage's clock starts (the apply kill -9 tests'
  wrapper kills the process here);
- failed(stage, exception): runs when a stage raises, before the exception propagates.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class StageTime:
    name: str
    seconds: float
    note: str = ""  # what the stage returned: one line for the progress display and the report


def _no_progress(stage: str, fraction: float) -> None:
    pass


def _no_hook(stage: str) -> None:
    pass


def _no_failure(stage: str, error: BaseException) -> None:
    pass


def produced(value: T | None, what: str) -> T:
    """A stage's input that an earlier stage produced (a run's state starts empty): read before
    that stage ran, it is a bug in the caller, not bad input."""
    if value is None:
        raise RuntimeError(f"{what} read before the stage that produces it ran")
    return value


@dataclass
class Hooks:
    progress: Callable[[str, float], None] = _no_progress
    before: Callable[[str], None] = _no_hook
    failed: Callable[[str, BaseException], None] = _no_failure


@dataclass
class Pipeline:
    stages: tuple[str, ...]
    hooks: Hooks = field(default_factory=Hooks)
    times: list[StageTime] = field(default_factory=list)  # the stages that ended, in order

    def run(self, target: object, names: Iterable[str] | None = None) -> None:
        """Run `target.stage_<name>()` for each name (all stages, or the given ones in order)."""
        for name in self.stages if names is None else names:
            self.run_stage(name, getattr(target, f"stage_{name}"))

    def run_stage(self, name: str, fn: Callable[[], str | None]) -> None:
        if name not in self.stages:
            raise ValueError(f"{name!r} is not a stage of {self.stages}")  # a bug, not input
        self.hooks.before(name)
        self.hooks.progress(name, 0.0)
        t0 = time.monotonic()
        try:
            note = fn()
        except BaseException as e:
            self.hooks.failed(name, e)
            raise
        self.times.append(StageTime(name, time.monotonic() - t0, note or ""))
        self.hooks.progress(name, 1.0)
