"""No number is ever cut in a terminal: every command that prints a table, at COLUMNS=80 and
at COLUMNS=200. At either width no `…` appears, the numbers in the text are the same ones
(a number cut or folded across lines would change them), and every number the table shows
from the command's --json output is there, at the table's precision.

The dry run's and compare-engines' tables are checked the same way in test_dryrun.py and
test_compare_engines.py, on the runs those tests make anyway."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from simfabrics import config_a, star

ROOT = Path(__file__).resolve().parents[2]
TESTBED = ROOT / "testbed/tests/fixtures"
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def run_at(ibqos_cli, width: int, *args, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS=str(width))
    cp = ibqos_cli(*args, cwd=cwd, env=env, timeout=300)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    return cp


def numbers(text: str) -> list[str]:
    # the host's CPU time of a run ("in 0.01 s CPU") differs between the two runs compared
    return NUMBER.findall(re.sub(r"in [0-9.]+ s CPU", "", text))


def shown(value: float, text: str) -> bool:
    """`value` appears in `text` rounded as some number there is written."""
    for tok in numbers(text):
        decimals = len(tok.split(".")[1]) if "." in tok else 0
        if abs(float(tok) - value) <= 0.5 * 10**-decimals + 1e-9 and (decimals or value == int(value)):
            return True
    return False


def assert_uncut(texts: dict[int, str]) -> None:
    """No `…`, tables within the width, and the same numbers at both widths (a split table
    repeats its key column, so as sets)."""
    for width, text in texts.items():
        assert "…" not in text, f"COLUMNS={width}:\n{text}"
        drawn = [ln for ln in text.splitlines() if set(ln) & set("│┃┏┗└┡")]
        assert drawn and max(len(ln) for ln in drawn) <= width, f"COLUMNS={width}:\n{text}"
    assert set(numbers(texts[80])) == set(numbers(texts[200])), texts[80]


def assert_shown(values, texts: dict[int, str]) -> None:
    values = [v for v in values if v is not None]
    assert values
    for width, text in texts.items():
        missing = [v for v in values if not shown(v, text)]
        assert not missing, f"COLUMNS={width}: {missing} not in\n{text}"


@pytest.fixture
def work(tmp_path):
    shutil.copy(ROOT / "examples/four-class.yaml", tmp_path / "policy.yaml")
    star(2, config_a()).save(tmp_path / "fabric.json")
    return tmp_path


def both(ibqos_cli, *args, cwd) -> dict[int, str]:
    return {w: run_at(ibqos_cli, w, *args, cwd=cwd).stdout for w in (80, 200)}


def test_plan_and_analyze(ibqos_cli, work):
    doc = json.loads(run_at(ibqos_cli, 200, "plan", "policy.yaml", "-o", "plan.json", "--json", cwd=work).stdout)
    texts = both(ibqos_cli, "plan", "policy.yaml", "-o", "plan.json", cwd=work)
    assert_uncut(texts)
    assert_shown([x for c in doc.values() for x in (c["share"], c["max_distance"], c["worst_wait_us"])], texts)

    doc = json.loads(run_at(ibqos_cli, 200, "analyze", "plan.json", "--json", cwd=work).stdout)
    texts = both(ibqos_cli, "analyze", "plan.json", cwd=work)
    assert_uncut(texts)
    e2e = doc.pop("end_to_end")["per_class"].values()
    per_vl = [s for role in doc.values() for s in role["per_vl"].values()]
    assert_shown(
        [s[k] for s in per_vl for k in ("share", "max_distance", "mean_distance", "worst_wait_bytes", "worst_wait_us")]
        + [c["bound_us"] for c in e2e],
        texts,
    )


def test_status(ibqos_cli, work):
    texts = both(ibqos_cli, "status", ".", cwd=work)
    assert_uncut(texts)
    # every weight of the 64-entry high table read back is there, whole, at 80 columns too
    weights = [w for _, w in config_a().high if w]
    for text in texts.values():
        lines = text[text.index("│ ca ") : text.index("│ sw0")].splitlines()
        high = " ".join(ln.split("│")[3] for ln in lines)  # the "high" column, wrapped
        assert [int(w) for w in re.findall(r"\d+:(\d+)", high)] == weights


def test_simulate_one_load_and_a_sweep(ibqos_cli, work):
    args = ("simulate", ".", "--traffic", "twonode", "--rate", "EDR", "--time-us", "300")
    doc = json.loads(run_at(ibqos_cli, 200, *args, "--json", cwd=work).stdout)
    texts = both(ibqos_cli, *args, cwd=work)
    assert_uncut(texts)
    (res,) = doc["results"]
    assert_shown(
        [c[k] for c in res["per_class"] for k in ("accepted_pct", "accepted_gbps", "share_pct")]
        + [c["net_latency"][k] for c in res["per_class"] for k in ("mean_us", "p99_us", "max_us")]
        + [u[k] for u in res["per_vl"].values() for k in ("mean_util_pct", "max_util_pct")],
        texts,
    )

    star(4, config_a()).save(work / "fabric.json")
    args = ("simulate", ".", "--traffic", "uniform", "--sweep", "0.2:1.0:0.4", "--warmup-us", "20", "--time-us", "100")
    doc = json.loads(run_at(ibqos_cli, 200, *args, "--json", cwd=work).stdout)
    texts = both(ibqos_cli, *args, cwd=work)
    assert_uncut(texts)
    assert_shown(
        [r["accepted_pct"] for r in doc["results"]]
        + [c[k] for r in doc["results"] for c in r["per_class"] for k in ("accepted_pct",)]
        + [c["net_latency"]["p99_us"] for r in doc["results"] for c in r["per_class"]],
        texts,
    )


def test_testbed_report(ibqos_cli, tmp_path):
    args = ("testbed", "report", TESTBED / "results_configA", "--prediction", TESTBED / "plan_configA.json")
    doc = json.loads(run_at(ibqos_cli, 200, *args, "--json", cwd=tmp_path).stdout)
    texts = both(ibqos_cli, *args, cwd=tmp_path)
    assert_uncut(texts)
    assert_shown(
        [c[k] for c in doc["per_class"] for k in ("predicted", "measured", "diff_predicted")] + [doc["total_gbps"]],
        texts,
    )
