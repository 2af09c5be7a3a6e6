"""The policy fuzzer (policy_fuzz.py), bounded to a few seconds; `make fuzz-policy` runs 10⁵.

Both outcomes must occur: a planner that refuses everything in one line (or plans everything)
is not what the fuzzer accepts. examples/two-class.yaml, clean and untricked, is always among the
examples and must plan."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import yaml
from hypothesis import HealthCheck, example, given, settings
from policy_fuzz import check, documents, render

TWO_CLASS = yaml.safe_load((Path(__file__).resolve().parents[2] / "examples" / "two-class.yaml").read_text())


def test_fuzzed_policy_plans_or_is_refused_in_one_line(tmp_path_factory):
    outcomes: Counter[str] = Counter()
    path = tmp_path_factory.mktemp("fuzz") / "p.yaml"

    @settings(
        max_examples=150,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @example((TWO_CLASS, []))
    @given(documents)
    def fuzz(case):
        outcome = check(render(*case), path)
        if case == (TWO_CLASS, []):
            assert outcome == "planned", "examples/two-class.yaml, untouched, must plan"
        outcomes[outcome] += 1

    fuzz()
    assert outcomes["planned"] >= 1 and outcomes["refused"] >= 1, dict(outcomes)
