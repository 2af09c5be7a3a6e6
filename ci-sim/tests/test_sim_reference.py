"""The simulator's results are bit-identical to the stored reference runs (simreference.py):
a change that makes the core faster must not change what it computes."""

from __future__ import annotations

import json

import pytest
from simreference import REFERENCE, cases, run_case

WANT = json.loads(REFERENCE.read_text())
CASES = cases()


def test_reference_names_every_case():
    assert sorted(WANT) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_result_equals_the_reference_run(name):
    got = json.loads(json.dumps(run_case(CASES[name])))  # the stored form: tuples as lists
    want = WANT[name]
    assert got["counters"] == want["counters"]
    assert got == want
