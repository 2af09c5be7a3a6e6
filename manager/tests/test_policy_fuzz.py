"""The policy fuzzer (policy_fuzz.py), bounded to a few seconds; `make fuzz-policy` runs 10⁵."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from policy_fuzz import check, documents, render


@settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(documents)
def test_fuzzed_policy_plans_or_is_refused_in_one_line(tmp_path_factory, case):
    path = tmp_path_factory.mktemp("fuzz") / "p.yaml"
    check(render(*case), path)
