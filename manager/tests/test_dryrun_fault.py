"""`ibqos dryrun --fault`: the whole dry run after a link or switch went down under OpenSM."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from ibqos.paths import REPO_ROOT
from test_dryrun import check_e2e_in_report

pytestmark = pytest.mark.fabric
POLICY = REPO_ROOT / "examples" / "two-class.yaml"


def dryrun(ibqos_cli, out, *extra, policy: Path = POLICY):
    # a wide terminal: the verdict's title line names the fault and must not wrap
    return ibqos_cli(
        "dryrun",
        policy,
        "--out",
        out,
        "--topology",
        "df42",
        "--sim-time",
        "50",
        *extra,
        env={**os.environ, "COLUMNS": "200"},
        timeout=600,
    )


def with_fault_tolerance(tmp_path) -> Path:
    """The example with its third VL per class reserved: a dead switch of a 3-switch group
    leaves a group pair without its only link, routed through a third group with a local hop
    there, which takes a third VL (plugin/README.md)."""
    text = POLICY.read_text().replace("  routing: dla\n", "  routing: dla\n  fault_tolerance: links\n")
    assert "fault_tolerance: links" in text
    path = tmp_path / "two-class-links.yaml"
    path.write_text(text)
    return path


def one_error_line(r) -> str:
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.startswith("ibqos: error: ")]
    assert len(lines) == 1, r.stderr[-2000:]
    return lines[0]


def test_bad_fault_spelling_stops_before_anything_starts(ibqos_cli, tmp_path):
    r = dryrun(ibqos_cli, tmp_path / "run", "--fault", "link:sw-g0-s0")
    assert one_error_line(r) == ("ibqos: error: --fault: 'link:sw-g0-s0': a link needs its port, e.g. link:sw-g0-s0[1]")
    assert not (tmp_path / "run").exists()


def test_unknown_node_is_one_line_and_no_report(ibqos_cli, tmp_path):
    r = dryrun(ibqos_cli, tmp_path / "run", "--fault", "switch:sw-g9-s0")
    assert one_error_line(r) == "ibqos: error: --fault: 'switch:sw-g9-s0': no node named 'sw-g9-s0' on this fabric"
    assert not (tmp_path / "run" / "report.json").exists()


def test_one_cable_named_from_both_ends_is_one_line_and_no_report(ibqos_cli, tmp_path):
    """redteam: two faults at once on one cable; ibsim refused the second unlink (exit 3)."""
    r = dryrun(ibqos_cli, tmp_path / "run", "--fault", "link:sw-g2-s0[3]", "--fault", "link:sw-g2-s1[3]")
    assert one_error_line(r) == (
        "ibqos: error: --fault: 'link:sw-g2-s1[3]': 'link:sw-g2-s0[3]' takes local link "
        "sw-g2-s1[3]-sw-g2-s0[3] down too; name each link or switch once"
    )
    assert not (tmp_path / "run" / "report.json").exists()


@pytest.mark.parametrize("sim_time", ["nan", "-5", "1e400"])
def test_a_sim_time_the_simulator_cannot_run_stops_before_anything_starts(ibqos_cli, tmp_path, sim_time):
    """redteam: was an internal error (SimParams' ValidationError) after the whole dry run."""
    r = ibqos_cli("dryrun", POLICY, "--out", tmp_path / "run", "--sim-time", sim_time, timeout=120)
    assert one_error_line(r).startswith("ibqos: error: --sim-time: ")
    assert not (tmp_path / "run").exists()


def test_lmc_the_site_runs_with_is_dlas_refusal_in_one_line(ibqos_cli, tmp_path):
    """redteam: a site with `lmc 1` (multipathing) learns from the dry run, not from its SM,
    that dla routes one LID per port and OpenSM falls back (the rendered chain's dfsssp)."""
    r = dryrun(ibqos_cli, tmp_path / "run", "--lmc", "1")
    assert r.returncode == 1, r.stderr[-2000:]
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("ibqos: error: ")]
    assert lines == [
        "ibqos: error: OpenSM fell back to dfsssp: D1A1: LMC 1 is set but dla routes one LID per port [rule: lmc 0]"
    ], r.stderr[-2000:]
    # an engine that routes every LID: judged to the end, every LID's routes verified
    policy = tmp_path / "minhop.yaml"
    policy.write_text(POLICY.read_text().replace("  routing: dla\n", "  routing: minhop\n  max_switch_hops: 3\n"))
    out = tmp_path / "mh"
    topo = ("--topology", "fattree:leaves=2,spines=1,hosts=3")
    r = ibqos_cli("dryrun", policy, "--out", out, *topo, "--sim-time", "20", "--lmc", "1", timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    report = json.loads((out / "report.json").read_text())
    assert report["verify"]["pairs"] == report["verify"]["delivered"] == 2 * 6 * 5
    assert "LMC 1: 2 LIDs per CA port; the routes to each are checked (pairs counts them)" in report["notes"]
    # the simulation sent to base LIDs only, and the report says so beside verify's warning
    sim_note = "LMC 1: packets go to each CA port's base LID only; the routes to its other 1 LID carry no"
    assert any(n.startswith(sim_note) for n in report["notes"]), report["notes"]


def links_of(fabric_json: dict, name: str) -> dict[int, str]:
    by_guid = {n["guid"]: n["desc"] for n in fabric_json["nodes"]}
    node = next(n for n in fabric_json["nodes"] if n["desc"] == name)
    return {p["num"]: by_guid[p["remote"][0]] for p in node["ports"] if p.get("remote")}


def test_global_link_fault_with_a_spare_link_keeps_every_sla(ibqos_cli, tmp_path):
    # df42 deals two global links to some group pairs: sw-g0-s1 port 7 is one of a pair's two
    r = dryrun(ibqos_cli, tmp_path / "run", "--fault", "link:sw-g0-s1[7]")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    rep = json.loads((tmp_path / "run" / "report.json").read_text())
    [f] = rep["faults"]
    assert (f["fault"], f["kind"], f["node"], f["port"]) == ("link:sw-g0-s1[7]", "global link", "sw-g0-s1", 7)
    assert rep["summary"].startswith("with link:sw-g0-s1[7]: 2/2 SLAs still met (qos, best-effort)")
    assert rep["fabric_checks"][0]["check"] == "fault applied"
    assert rep["verify"]["delivered"] == rep["verify"]["pairs"] == 42 * 41
    assert rep["verify"]["cdg_acyclic"] and not rep["refusal"]
    # the read-back (what the switches hold now) has the link down, the OpenSM runs both routed
    fabric = json.loads((tmp_path / "run" / "fabric.json").read_text())
    assert 7 not in links_of(fabric, "sw-g0-s1")
    logs = sorted((tmp_path / "run" / "fabric").glob("sm*/osm.log"))
    assert len(logs) == 2 and all("dla tables configured" in p.read_text() for p in logs)
    out = " ".join(r.stdout.split())
    assert "with link:sw-g0-s1[7]" in out and "fault applied" in out
    html = (tmp_path / "run" / "report.html").read_text()
    assert "<code>link:sw-g0-s1[7]</code>" in html


def test_switch_down_is_routed_by_dla_and_the_report_names_it(ibqos_cli, tmp_path):
    """Issue 10's acceptance: dla routes around a switch that is down (hosts cut off)."""
    r = dryrun(ibqos_cli, tmp_path / "run", "--fault", "switch:sw-g3-s1", policy=with_fault_tolerance(tmp_path))
    rep = json.loads((tmp_path / "run" / "report.json").read_text())
    [f] = rep["faults"]
    assert f["kind"] == "switch" and f["lost_cas"] == ["ca-g3-s1-h0", "ca-g3-s1-h1"]
    assert rep["verify"]["pairs"] == 40 * 39
    assert not rep["refusal"], rep["refusal"]
    assert r.returncode == 0 and rep["ok"], rep["summary"]
    # detours make longer routes: the end-to-end bound is for the routes as programmed
    assert max(int(h) for h in rep["verify"]["hops"]) == 4
    plan = json.loads((tmp_path / "run" / "plan.json").read_text())
    check_e2e_in_report(rep, plan, (tmp_path / "run" / "report.html").read_text(), r.stdout)


@pytest.mark.parametrize(
    "fabric, fault",
    [
        # the only global link of groups 0 and 5: dla needs a third VL per class and refuses
        ("df42", "link:sw-g0-s0[6]"),
        # dla routes the healthy fabric as a degraded dragonfly (a group lost a local link),
        # then the only global link of groups 2 and 3 goes
        ("nolocal72", "link:sw-g3-s0[6]"),
    ],
)
def test_a_fault_dla_refuses_is_reported_without_an_invented_credit_loop(ibqos_cli, tmp_path, fabric, fault):
    """After the fault OpenSM routes with dfsssp, which gives every path the SL of its layer;
    the dry run judges each class on one SL and cannot ask a `--once` OpenSM for path SLs.
    Before: df42 reported 'channel dependency graph: cycle: ...' (with the SA's path SLs the
    graph is acyclic, ibqos.verify and ibdmchk alike: docs/fallback.md), and on a fabric dla
    had routed as degraded the run ended in an internal error (NotADragonfly, exit 70) looking
    for an exact partition of the healthy fabric. Now exit 1: dla's refusal, the CDG not judged."""
    from ibqos_sim.harness.topology import dragonfly_missing_local_link

    where = ["--topology", fabric]
    if fabric == "nolocal72":
        where = ["--net", dragonfly_missing_local_link(4, 2, 2).write_net(tmp_path / "nolocal72.net")]
    out = tmp_path / "run"
    r = ibqos_cli("dryrun", POLICY, "--out", out, *where, "--sim-time", "20", "--fault", fault, timeout=600)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    rep = json.loads((out / "report.json").read_text())
    checks = {c["check"]: c for c in rep["fabric_checks"]}
    assert checks["routing engine"]["ok"] is False
    assert checks["routing engine"]["result"].startswith("dfsssp (dla refused: D1A0: "), checks["routing engine"]
    cdg = checks["channel dependency graph"]
    assert cdg["ok"] is None and cdg["result"].startswith("not judged: dfsssp gives every path the SL of its layer")
    assert rep["verify"]["delivered"] == rep["verify"]["pairs"]
    assert "channel dependency graph" not in rep["summary"] and "fabric check failed: routing engine" in rep["summary"]


def test_a_switch_whose_group_has_no_other_way_out_cuts_the_group_off(ibqos_cli, tmp_path):
    """A dragonfly+ with one spine per group: the spine down leaves its leaves and their hosts
    cabled but with no path to the SM. Before: 'switch sw-g1-s0 down (0 hosts cut off)', and
    the dry run failed 'every node of the net file discovered: 6 not reached by the SM' (exit
    1), where a switch that takes its own hosts down passes naming them."""
    out = tmp_path / "run"
    r = ibqos_cli(
        "dryrun", POLICY, "--out", out, "--topology", "dfplus:l=2,s=1,p=2,h=3", "--sim-time", "20",
        "--fault", "switch:sw-g1-s0", timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    rep = json.loads((out / "report.json").read_text())
    [f] = rep["faults"]
    assert f["description"] == "switch sw-g1-s0 down (4 hosts cut off)"
    assert f["lost_cas"] == ["ca-g1-l0-h0", "ca-g1-l0-h1", "ca-g1-l1-h0", "ca-g1-l1-h1"]
    checks = {c["check"]: c for c in rep["fabric_checks"]}
    assert checks["every node of the net file discovered"]["result"] == "yes"
    assert rep["verify"]["delivered"] == rep["verify"]["pairs"] == 12 * 11


def test_a_fault_that_leaves_the_sm_with_a_rump_of_the_fabric_is_refused(ibqos_cli, tmp_path):
    """The same spine in the SM's own group: OpenSM keeps a path to its leaf's 2 hosts of 16.
    Judging what it keeps would pass on 2 CA pairs; refused as a fault on the SM's own switch is."""
    r = ibqos_cli(
        "dryrun", POLICY, "--out", tmp_path / "run", "--topology", "dfplus:l=2,s=1,p=2,h=3", "--sim-time", "20",
        "--fault", "switch:sw-g0-s0", timeout=600,
    )  # fmt: skip
    assert one_error_line(r) == (
        "ibqos: error: --fault: 'switch:sw-g0-s0': OpenSM runs on ca-g0-l0-h0, which this fault cuts off the "
        "fabric (it keeps a path to 2 hosts of 16); name another link or switch"
    )


def test_two_spines_that_cut_their_group_off_only_together_name_it(ibqos_cli, tmp_path):
    """A dragonfly+ with two spines per group: either spine of group 1 down leaves its leaves
    the other; both down cut the group off. Before: each said '(0 hosts cut off)' and the dry
    run failed 'every node of the net file discovered: 6 not reached by the SM' (exit 1), where
    one fault cutting a group off passes naming it. In the SM's own group both spines down
    leave it its leaf's 2 hosts of 28: refused, as one such fault is."""
    topo = ("--topology", "dfplus:l=2,s=2,p=2,h=3", "--sim-time", "20")
    out = tmp_path / "run"
    spines = ("--fault", "switch:sw-g1-s0", "--fault", "switch:sw-g1-s1")
    r = ibqos_cli("dryrun", POLICY, "--out", out, *topo, *spines, env={**os.environ, "COLUMNS": "200"}, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    rep = json.loads((out / "report.json").read_text())
    assert [f["description"] for f in rep["faults"]] == [
        "switch sw-g1-s0 down (0 hosts cut off)",
        "switch sw-g1-s1 down (0 hosts cut off)",
    ]
    together = rep["faults_together"]
    assert together["lost_cas"] == ["ca-g1-l0-h0", "ca-g1-l0-h1", "ca-g1-l1-h0", "ca-g1-l1-h1"]
    assert together["cut_switches"] == ["sw-g1-l0", "sw-g1-l1"]
    checks = {c["check"]: c for c in rep["fabric_checks"]}
    assert checks["faults applied together"]["result"] == (
        "switch:sw-g1-s0 + switch:sw-g1-s1 together cut off 4 hosts and 2 switches"
    )
    assert checks["every node of the net file discovered"]["result"] == "yes"
    assert rep["verify"]["delivered"] == rep["verify"]["pairs"] == 24 * 23
    assert "faults applied together" in " ".join(r.stdout.split())
    assert "together cut off 4 hosts and 2 switches" in (out / "report.html").read_text()
    r = ibqos_cli(
        "dryrun", POLICY, "--out", tmp_path / "rump", *topo, "--fault", "switch:sw-g0-s0", "--fault",
        "switch:sw-g0-s1", timeout=600,
    )  # fmt: skip
    assert one_error_line(r) == (
        "ibqos: error: --fault: 'switch:sw-g0-s0', 'switch:sw-g0-s1': OpenSM runs on ca-g0-l0-h0, which these "
        "faults together cut off the fabric (it keeps a path to 2 hosts of 28); name another link or switch"
    )
