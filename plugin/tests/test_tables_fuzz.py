"""The libFuzzer harness for the table-file parser (plugin/tests/fuzz), for a fixed number of
executions so `make test` stays short; `make fuzz` runs it for 2,000,000."""

from __future__ import annotations

from pathlib import Path

from ibqos.proc import run_command

RUN = Path(__file__).resolve().parent / "fuzz" / "run.sh"
RUNS = 30000


def test_fuzz_table_parser_fixed_runs():
    cp = run_command([str(RUN), str(RUNS)], timeout=300, check=False)
    assert cp.returncode == 0, cp.stderr[-3000:]
    assert f"Done {RUNS} runs" in cp.stdout
    assert f"stat::number_of_executed_units: {RUNS}" in cp.stdout
