"""A credit-loop verdict file (ibqos.verdict/1) read strictly: a hand-edited or foreign one is
one line naming file, line and field (exit 2 when the monitor starts), and one that turns bad
during a run is no verdict, not the last good one (docs/monitor.md, "Credit loops")."""

from __future__ import annotations

import json
import os

import pytest
from ibqos.errors import InputError
from ibqos.monitor.credit import VerdictWatch
from ibqos.monitor.export import MonitorCollector, registry_for
from ibqos.monitor.judge import Judged
from ibqos.verdict import load_verdict
from prometheus_client import generate_latest

GOOD = {"schema": "ibqos.verdict/1", "read_at": 1.7e9, "source": "live:ibqos-readback", "engine": "dla"}


def write(path, doc):
    path.write_text(json.dumps(doc, indent=1) + "\n")


@pytest.mark.parametrize(
    ("field", "value", "line"),
    [("credit_loop", "yes", 6), ("credit_loop", 1, 6), ("read_at", -5, 3), ("read_at", "1.7e9", 3), ("engine", 7, 5)],
)
def test_a_verdict_field_of_the_wrong_type_or_range_is_named_with_its_line(tmp_path, field, value, line):
    path = tmp_path / "verdict.json"
    write(path, {**GOOD, "credit_loop": False, field: value})
    with pytest.raises(InputError) as e:
        load_verdict(path)
    assert str(e.value).startswith(f"{path}:{line}: {field}: "), str(e.value)


def test_a_verdict_without_its_schema_is_not_one(tmp_path):
    path = tmp_path / "verdict.json"
    write(path, {k: v for k, v in {**GOOD, "credit_loop": True}.items() if k != "schema"})
    with pytest.raises(InputError, match=r":1: schema: "):
        load_verdict(path)


def test_a_verdict_that_turns_bad_during_a_run_exports_no_verdict_and_says_so_once(tmp_path):
    path = tmp_path / "verdict.json"
    write(path, {**GOOD, "credit_loop": True})
    said: list[str] = []
    watch = VerdictWatch(path, warn=said.append)
    watch.start()
    assert watch.verdict() is not None and watch.verdict().credit_loop is True  # type: ignore[union-attr]
    write(path, {**GOOD, "credit_loop": "yes"})
    os.utime(path, ns=(1, 1))  # a different stamp even on a coarse clock
    c = MonitorCollector()
    for _ in range(2):
        c.update(Judged(10.0, [], [], []), "dla", watch.verdict(), verdict_unreadable=watch.unreadable)
    text = generate_latest(registry_for(c)).decode()
    assert "ibqos_credit_loop{" not in text and "ibqos_credit_loop_read_timestamp_seconds" not in text
    assert "ibqos_credit_loop_verdict_unreadable 1.0" in text
    assert len(said) == 1 and said[0].startswith(f"ibqos: error: {path}:6: credit_loop: "), said
    write(path, {**GOOD, "credit_loop": False})  # status writes it again: a verdict again
    c.update(Judged(10.0, [], [], []), "dla", watch.verdict(), verdict_unreadable=watch.unreadable)
    text = generate_latest(registry_for(c)).decode()
    assert 'ibqos_credit_loop{engine="dla"} 0.0' in text and "ibqos_credit_loop_verdict_unreadable 0.0" in text


def test_a_verdict_that_is_bad_at_start_is_an_input_error(tmp_path):
    path = tmp_path / "verdict.json"
    write(path, {**GOOD, "credit_loop": "yes"})
    with pytest.raises(InputError, match=":6: credit_loop: "):
        VerdictWatch(path, warn=print).start()


def test_a_verdict_path_that_becomes_no_file_during_a_run_is_unreadable_not_the_end(tmp_path):
    """A FIFO (or a directory) put at the --verdict path during a run: stat() found it before
    the file was read, outside the error handling, and the monitor ended with exit 2."""
    path = tmp_path / "verdict.json"
    write(path, {**GOOD, "credit_loop": False})
    said: list[str] = []
    watch = VerdictWatch(path, warn=said.append)
    watch.start()
    assert watch.verdict() is not None
    path.unlink()
    os.mkfifo(path)
    assert [watch.verdict() for _ in range(2)] == [None, None] and watch.unreadable
    assert said == [f"ibqos: error: {path}: not a regular file"], said
    path.unlink()
    write(path, {**GOOD, "credit_loop": True})
    assert watch.verdict() is not None and not watch.unreadable
