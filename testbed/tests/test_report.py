"""`ibqos testbed report` on recorded result sets of seed 002 configuration A."""

from __future__ import annotations

import json
import re

import pytest
from ibqos_testbed import chart
from ibqos_testbed.compare import build_report
from testbed_helpers import FIXTURES

GOOD = FIXTURES / "results_configA"
SL2_OFF = FIXTURES / "results_configA_sl2_off"
PLAN = FIXTURES / "plan_configA.json"


def test_configuration_a_passes(ibqos_cli):
    r = ibqos_cli("testbed", "report", GOOD, "--prediction", PLAN, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["passed"] and doc["failures"] == []
    measured = {c["name"]: c["measured"] for c in doc["per_class"]}
    assert measured == pytest.approx({"latency": 45.7, "storage": 27.4, "bulk": 18.4, "scavenger": 8.6}, abs=0.2)
    # Independently of the parser: the receivers' "BW average" column of the recorded
    # perftest output, as shares of their sum (class i is SL i in configuration A).
    bw = [
        float(
            re.search(
                r"^\s*65536\s+\d+\s+\S+\s+(\S+)", (GOOD / "bw" / f"bw-sl{sl}.server.out").read_text(), re.M
            ).group(1)
        )
        for sl in range(4)
    ]
    expect = dict(zip(["latency", "storage", "bulk", "scavenger"], (100 * b / sum(bw) for b in bw), strict=True))
    assert measured == pytest.approx(expect, abs=0.01)
    assert all(abs(c["diff_predicted"]) < 0.2 and c["passed"] for c in doc["per_class"])
    by_sl = {s["sl"]: s for s in doc["per_sl"]}
    # Seed 002 Fig. 4: the smaller an SL's share, the longer its messages wait under load.
    loaded = [by_sl[sl]["lat_loaded_us"]["t_avg"] for sl in range(4)]
    assert loaded == sorted(loaded) and by_sl[0]["lat_idle_us"]["t_avg"] < loaded[0]


def test_one_sl_off_by_3pp_fails_naming_it(ibqos_cli):
    r = ibqos_cli("testbed", "report", SL2_OFF, "--prediction", PLAN)
    assert r.returncode == 1
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in r.stderr
    assert err[0].startswith(
        "ibqos: error: FAIL: SL 2 (bulk): measured 21.30 % vs predicted 18.35 % (+2.94 pp, tolerance 2 pp)"
    )
    assert "SL 0" not in err[0] and "SL 1" not in err[0] and "SL 3" not in err[0]
    assert "FAIL" in r.stdout and r.stdout.count("pass") == 3


def test_tolerance_is_the_plans_unless_given(ibqos_cli, tmp_path):
    """One set of defaults: the dry run and the testbed judge with the policy's
    verdict.share_tolerance_pp, carried by the plan; --tolerance overrides it."""
    doc = json.loads(PLAN.read_text())
    doc["share_tolerance_pp"] = 3.0
    wide = tmp_path / "plan.json"
    wide.write_text(json.dumps(doc))
    assert ibqos_cli("testbed", "report", SL2_OFF, "--prediction", wide).returncode == 0
    r = ibqos_cli("testbed", "report", SL2_OFF, "--prediction", wide, "--tolerance", "1")
    assert r.returncode == 1 and "tolerance 1 pp" in r.stderr
    assert "note: --tolerance 1 overrides the plan's 3 pp" in r.stderr


def test_tolerance_is_an_option():
    rep = build_report(SL2_OFF, tolerance=3.0)
    assert rep.passed
    rep = build_report(GOOD, tolerance=0.1)
    assert not rep.passed and "SL 1 (storage)" in rep.verdict


def test_prediction_defaults_to_the_run_plans_copy():
    rep = build_report(GOOD)
    assert rep.passed and rep.prediction_source == "plan_configA.json"
    assert [c.predicted for c in rep.classes] == [c.predicted for c in build_report(GOOD, prediction=PLAN).classes]


def test_simulated_shares_are_compared_too(ibqos_cli, tmp_path):
    sim = tmp_path / "sim.json"
    sim.write_text(json.dumps({"per_sl": {"0": 45.6, "1": 27.5, "2": 18.3, "3": 8.6}}))
    assert build_report(GOOD, simulated=sim).passed
    sim.write_text(json.dumps({"per_sl": {"0": 45.6, "1": 27.5, "2": 16.0, "3": 10.9}}))
    rep = build_report(GOOD, simulated=sim)
    assert [f.split(":")[0] for f in rep.failures] == ["SL 2 (bulk)", "SL 3 (scavenger)"]
    assert "vs simulated 16.00 %" in rep.failures[0]
    rows = [
        {"name": f"SL{sl}", "sl": sl, "share_pct": v, "accepted_gbps": 1.0}
        for sl, v in enumerate((45.9, 27.2, 18.5, 8.4))
    ]
    sim.write_text(json.dumps({"status": "done", "per_sl": rows, "per_class": []}))
    assert build_report(GOOD, simulated=sim).passed  # ibqos_sim's SimResult JSON
    sim.write_text(json.dumps({"per_class": {"latency": 45.6}}))
    r = ibqos_cli("testbed", "report", GOOD, "--simulated", sim)
    assert r.returncode == 2 and "per_class: no share for class 'storage'" in r.stderr


def test_prediction_from_another_plan_must_match_the_classes(ibqos_cli, make_plan):
    plan = make_plan(lambda d: d["classes"][2].update(name="bulky"))
    r = ibqos_cli("testbed", "report", GOOD, "--prediction", plan)
    assert r.returncode == 2
    assert r.stderr.strip() == f"ibqos: error: {plan}: classes: class 'bulk' of the run is not in this plan"


def test_results_directory_errors(ibqos_cli, tmp_path):
    r = ibqos_cli("testbed", "report", tmp_path)
    assert r.returncode == 2 and "results.json" in r.stderr and "Traceback" not in r.stderr
    (tmp_path / "results.json").write_text('{"schema": "ibqos.testbed-results/1"}')
    r = ibqos_cli("testbed", "report", tmp_path)
    assert r.returncode == 2 and "runplan: Field required" in r.stderr


def test_png_has_labelled_axes_and_legends(ibqos_cli, tmp_path):
    rep = build_report(SL2_OFF)
    fig = chart.figure(rep)
    (bw, lat) = fig.axes
    assert bw.get_ylabel().startswith("share") and bw.get_xlabel()
    assert lat.get_ylabel().startswith("message latency") and lat.get_xlabel()
    assert [t.get_text() for t in bw.get_legend().get_texts()] == ["predicted share", "measured share"]
    assert len(lat.get_legend().get_texts()) == 2
    import matplotlib.pyplot as plt

    plt.close(fig)
    out = tmp_path / "r.png"
    r = ibqos_cli("testbed", "report", GOOD, "--png", out)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 20_000
    assert [p.name for p in tmp_path.iterdir()] == ["r.png"]  # no temporary left behind


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        # a class of the run with an SL no bandwidth flow measures: a KeyError, exit 70, before
        (
            lambda rp: rp["classes"].append({"name": "x", "sls": [9], "priority": "low", "predicted_share": 0}),
            r"runplan: class 'x' has SL 9, and phase 'bw' no flow bw-sl9 to measure it$",
        ),
        # a phase or flow naming a path outside the results: the runner wrote there, before
        (lambda rp: rp["phases"][1].update(name="../../escape"), r"json: runplan.phases.1.name: '../../escape' names"),
        (
            lambda rp: rp["phases"][0]["flows"][1].update(id="/tmp/x"),
            r"json: runplan.phases.0.flows.1.id: '/tmp/x' names",
        ),
        (lambda rp: rp["phases"][2].update(name="bw"), r"runplan: phase 'bw' twice"),
    ],
)
def test_a_run_plan_short_of_a_flow_or_naming_paths_outside_the_results_is_bad_input(ibqos_cli, tmp_path, edit, said):
    doc = json.loads((GOOD / "results.json").read_text())
    edit(doc["runplan"])
    (tmp_path / "results.json").write_text(json.dumps(doc, indent=2))
    r = ibqos_cli("testbed", "report", tmp_path)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.splitlines()) == 1 and re.search(said, r.stderr), r.stderr
