"""`ibqos paper seed003-5.1` end to end on real OpenSM + the simulator, in its quick form:
the figures and Table 1 are written, the paper's values sit beside ours, dla never
deadlocks, and the switch models' defining behaviour shows: VOQs sharing a 1-packet VL
buffer cannot gain anything, with 4 packets they gain; VOQs with a buffer each gain at 1
packet already, as in the paper."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.fabric


def test_seed003_quick_run_writes_table_and_figures(ibqos_cli, tmp_path):
    out = tmp_path / "paper"
    r = ibqos_cli(
        "paper",
        "seed003-5.1",
        "--quick",
        "--engines",
        "dla,updn",
        "--buffers",
        "1,4",
        "--input-reads",
        "1",
        "--out",
        out,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    names = ["table1.md", "results.json", "fig10-reads1.png"]
    names += [f"fig{n}-reads1-{vb}.png" for n in (11, 12) for vb in ("shared", "per-output")]
    for name in names:
        assert (out / name).stat().st_size > 0, name
    doc = json.loads((out / "results.json").read_text())
    rows = {row["engine"]: row for row in doc["table1"]}
    assert rows["dla"]["paper"] == [1.356, 1.428, 1.448]
    per = rows["dla"]["ours"]["reads1-shared"]["per_buffer"]
    assert per["1"] == pytest.approx(1.0, abs=0.02)
    assert per["4"] > 1.1
    assert rows["dla"]["ours"]["reads1-per-output"]["per_buffer"]["1"] > 1.2
    dla = next(run for run in doc["runs"] if run["engine"] == "dla")
    assert all(s == "done" for c in dla["curves"] for s in c["status"])
    # updn cannot route a dragonfly in OpenSM 3.3.23: said, not simulated under its name
    assert rows["updn"]["skipped"] and "instead" in rows["updn"]["skipped"]
    md = (out / "table1.md").read_text()
    assert "| dla | 1, shared | 1.356 / 1.428 / 1.448 |" in md
    assert "| dla | 1, per-output | 1.356 / 1.428 / 1.448 |" in md
