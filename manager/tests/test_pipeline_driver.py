"""The one stage driver (ibqos.pipeline) that the dry run and apply share: stages in the
tuple's order, each timed with its note, progress at start and end, the fault hook before a
stage starts, the failure hook when one raises, and the exception leaves unchanged."""

from __future__ import annotations

import pytest
from ibqos import pipeline
from ibqos.errors import InputError, VerificationFailed
from ibqos.pipeline import Hooks, Pipeline


class Clock:
    """The driver's monotonic clock, moved by hand: stage a takes 1 s, b 2 s, c 3 s, and the
    hooks around a stage 100 s that are not the stage's."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def clock(monkeypatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(pipeline, "time", c)
    return c


class Run:
    def __init__(self, events: list[str], fail: str | None = None, clock: Clock | None = None):
        self.events, self.fail, self.clock = events, fail, clock

    def _stage(self, name: str) -> str:
        self.events.append(f"run {name}")
        if name == self.fail:
            try:
                raise InputError("bad", field="x")
            except InputError as e:
                raise VerificationFailed(f"{name} found a defect") from e
        if self.clock:
            self.clock.now += " abc".index(name)
        return f"{name} done"

    def stage_a(self) -> str:
        return self._stage("a")

    def stage_b(self) -> str:
        return self._stage("b")

    def stage_c(self) -> str:
        return self._stage("c")


def _pipeline(events: list[str], clock: Clock | None = None) -> Pipeline:
    def outside(line: str) -> None:  # hook time is not the stage's
        events.append(line)
        if clock:
            clock.now += 100

    return Pipeline(
        ("a", "b", "c"),
        Hooks(
            progress=lambda s, f: outside(f"progress {s} {f}"),
            before=lambda s: outside(f"before {s}"),
            failed=lambda s, e: events.append(f"failed {s} {type(e).__name__}"),
        ),
    )


def test_stages_run_in_order_timed_with_their_notes(clock):
    events: list[str] = []
    p = _pipeline(events, clock)
    p.run(Run(events, clock=clock))
    assert events == [e for s in "abc" for e in (f"before {s}", f"progress {s} 0.0", f"run {s}", f"progress {s} 1.0")]
    timed = [(t.name, t.seconds, t.note) for t in p.times]
    assert timed == [("a", 1, "a done"), ("b", 2, "b done"), ("c", 3, "c done")]


def test_a_failing_stage_calls_the_failure_hook_and_leaves_with_its_cause():
    events: list[str] = []
    p = _pipeline(events)
    with pytest.raises(VerificationFailed, match="b found a defect") as info:
        p.run(Run(events, fail="b"))
    assert isinstance(info.value.__cause__, InputError)  # shown under ibqos -v
    assert events[-2:] == ["run b", "failed b VerificationFailed"]
    assert "run c" not in events and [t.name for t in p.times] == ["a"]


def test_a_subset_runs_in_the_order_given_and_an_unknown_stage_is_a_bug():
    events: list[str] = []
    p = _pipeline(events)
    p.run(Run(events), ("c", "a"))
    assert [t.name for t in p.times] == ["c", "a"]
    with pytest.raises(ValueError, match="'d' is not a stage"):
        p.run_stage("d", lambda: None)


def test_the_cli_shows_one_line_and_under_v_the_chained_cause(ibqos_cli, tmp_path):
    bad = tmp_path / "fabric.json"
    bad.write_text('{"schema": "ibqos.fabric/1", "nodes": [\n')
    quiet = ibqos_cli("verify", bad, timeout=60)
    assert quiet.returncode == 2 and quiet.stderr == f"ibqos: error: {bad}:2: not JSON: Expecting value\n"
    loud = ibqos_cli("-v", "verify", bad, timeout=60)
    assert loud.returncode == 2 and loud.stderr.endswith(quiet.stderr)
    assert "json.decoder.JSONDecodeError" in loud.stderr and "direct cause" in loud.stderr
