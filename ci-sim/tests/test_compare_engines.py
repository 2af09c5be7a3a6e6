"""`ibqos compare-engines df72` on real OpenSM: every engine routes and is simulated with the
SLs its paths really have (per pair, from the SA, for lash and dfsssp), an engine OpenSM
replaces is said so with OpenSM's reason, minhop's credit loop deadlocks with 1-packet
buffers and is shown as a deadlock, dla never deadlocks."""

from __future__ import annotations

import json
import os
from collections import Counter

import pytest
from ibqos.fabric.model import Fabric
from ibqos_sim.sim import SimParams, Simulation, TrafficSpec, compile_network

ENGINES = ("dla", "lash", "dfsssp", "updn", "minhop")
LOADS = (0.6, 1.0)


@pytest.fixture(scope="module")
def compared(ibqos_cli, tmp_path_factory):
    """One run, 1-packet buffers (where a credit loop closes soonest), high loads."""
    out = tmp_path_factory.mktemp("cmp")
    r = ibqos_cli(
        "compare-engines",
        "df72",
        "--engines",
        ",".join(ENGINES),
        "--patterns",
        "uniform,stencil3d,hotspot",
        "--loads",
        ",".join(map(str, LOADS)),
        "--buffer-packets",
        "1",
        "--time-us",
        "150",
        "--warmup-us",
        "30",
        "--out",
        str(out),
        env=dict(os.environ, COLUMNS="80"),
        timeout=900,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads((out / "compare.json").read_text())
    return out, r.stdout, {e["engine"]: e for e in doc["engines"]}, doc


@pytest.mark.fabric
def test_every_engine_is_compared_as_it_really_routed(compared):
    out, stdout, eng, doc = compared
    assert [e for e in eng] == list(ENGINES)
    assert doc["patterns"] == ["uniform", "stencil", "hotspot"]
    assert (out / "compare.png").stat().st_size > 0
    for name in ("lash", "dfsssp"):
        e = eng[name]
        assert e["routed_by"] == name and not e["credit_loop"]
        assert len(e["sls_used"]) > 1
        for pattern, pts in e["curves"].items():
            for pt in pts:
                # the simulator's own per-SL counters: packets travelled on several SLs, and
                # only on SLs the SA handed out
                sls = {int(s) for s in pt["per_sl_packets"]}
                assert len(sls) > 1 and sls <= set(e["sls_used"]), (name, pattern, pt)
                assert pt["status"] == "done", (name, pattern, pt["load"])
    dla = eng["dla"]
    assert dla["sls_used"] == [0] and dla["vls_used"] == [0, 1] and not dla["credit_loop"]
    assert all(pt["status"] == "done" for c in dla["curves"].values() for pt in c)
    # minhop on one VL: a credit loop, and with 1-packet buffers at full load it deadlocks
    mh = eng["minhop"]
    assert mh["credit_loop"] is True
    full = [pt for c in mh["curves"].values() for pt in c if pt["load"] == 1.0]
    assert full and all(pt["status"] == "deadlock" for pt in full)
    assert all(len(pt["deadlock"]["cycle"]) >= 3 for pt in full)
    # updn finds no root on a dragonfly; OpenSM falls back to minhop, and we say so
    up = eng["updn"]
    assert up["routed_by"] == "minhop" and up["curves"] == {}
    assert "instead" in up["skipped"] and "no root nodes" in up["skipped"]
    rows = {ln.split("│")[1].strip(): ln for ln in stdout.splitlines() if ln.count("│") > 4}
    assert "DEADLOCK" in rows["minhop"] and "not run" in rows["updn"]
    assert "DEADLOCK" not in rows["dla"]
    # printed at 80 columns: no number cut, every engine's accepted traffic at every load whole
    assert "…" not in stdout
    words = set(stdout.replace("│", " ").split())
    for e in eng.values():
        for pts in e["curves"].values():
            assert all(f"{pt['accepted_pct']:.1f}" in words for pt in pts if pt["status"] == "done"), stdout


@pytest.mark.fabric
def test_saved_read_back_carries_the_pair_sls_and_the_audit_holds(ibqos_cli, compared):
    """OUT/lash/fabric.json keeps the SA's SL per CA pair (so `ibqos verify` of it finds no
    credit loop, where SL 0 for every pair would); simulating it, every packet rides
    its pair's SL (delivered share per SL = share of pairs on it, at a load nothing
    saturates) while conservation and every buffer's credits hold at each step."""
    out = compared[0]
    fabric = Fabric.load(out / "lash" / "fabric.json")
    lids = sorted(p.lid for n in fabric.cas() for p in n.ports.values() if p.lid)
    assert len(lids) == 72
    assert set(fabric.path_sls) == {(s, d) for s in lids for d in lids if s != d}
    pairs = Counter(fabric.path_sls.values())
    assert len(pairs) > 1
    assert Fabric.load(out / "dla" / "fabric.json").path_sls is None  # dla: one SL, no table
    # the verifier judges the saved model by the same pair SLs: lash has no credit loop
    v = ibqos_cli("verify", str(out / "lash" / "fabric.json"), timeout=120)
    assert v.returncode == 0, v.stdout[-1500:]
    assert "SA path records saved in" in v.stdout and "acyclic" in v.stdout

    net = compile_network(fabric, rate_gbps=32)
    params = SimParams(buffer_packets=2, warmup_us=20, time_us=300)
    with Simulation(net, TrafficSpec(pattern="uniform"), params, 0.3, audit=True) as sim:
        for k in range(1, 7):
            sim.run(sim.end_ps * k // 6)
            r, a = sim.raw, sim.audit()
            assert r.injected == r.delivered + r.in_flight + r.dropped_route + r.dropped_vl
            assert r.dropped_route == r.dropped_vl == 0
            assert a.queue_errors == 0 and a.credit_errors == 0 and a.read_errors == 0
            assert a.queued + a.on_link == r.in_flight
        res = sim.result()
    assert res.status == "done"
    got = {x.sl: x.packets for x in res.per_sl if x.packets}
    total = sum(got.values())
    assert total > 4000
    # ~6000 packets: one standard deviation of a share is under 0.007
    for sl, n in pairs.items():
        assert got.get(sl, 0) / total == pytest.approx(n / len(fabric.path_sls), abs=0.035), (sl, got, pairs)
    # what each SL was offered: every source spreads load 0.3 uniformly over its 71 pairs
    offered = {x.sl: x.offered_pct for x in res.per_sl}
    for sl, n in pairs.items():
        assert offered[sl] == pytest.approx(30 * n / len(fabric.path_sls), abs=0.002), (sl, offered)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--engines", "file"], "--engines: file: needs LFT dump files"),
        (["--engines", "dla,minhop,dla"], "--engines: dla named twice"),
        (["--engines", "nosuch"], "--engines: unknown routing engine 'nosuch' (known: dla, minhop,"),
        (["--patterns", "uniform,tornado"], "--patterns: 'tornado': patterns are uniform, stencil, hotspot"),
        (["--loads", "0.5,1.5"], "--loads: loads are fractions of the link in (0, 1]"),
    ],
)
def test_bad_options_are_one_line_before_anything_starts(ibqos_cli, tmp_path, args, message):
    r = ibqos_cli("compare-engines", "df72", *args, "--out", str(tmp_path / "out"), timeout=60)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"ibqos: error: {message}"), r.stderr
    assert not (tmp_path / "out").exists()


def test_a_missing_net_file_or_unknown_size_is_bad_input(ibqos_cli, tmp_path):
    r = ibqos_cli("compare-engines", str(tmp_path / "x.net"), "--out", str(tmp_path / "out"), timeout=60)
    assert r.returncode == 2 and r.stderr.strip() == f"ibqos: error: {tmp_path / 'x.net'}: no such ibsim net file"
    r = ibqos_cli("compare-engines", "df7", "--out", str(tmp_path / "out"), timeout=60)
    assert r.returncode == 2 and "FABRIC: no preset dragonfly with 7 CAs" in r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.fabric
def test_compare_engines_on_a_dragonfly_plus_gives_every_engine_its_curves(ibqos_cli, tmp_path):
    """Issue 24: dla against ftree, updn, dfsssp, lash and minhop on a dragonfly+, uniform,
    hotspot and adversarial (every CA to the next group, by the checker's groups)."""
    engines = ("dla", "ftree", "updn", "dfsssp", "lash", "minhop")
    r = ibqos_cli(
        "compare-engines",
        "dfplus:l=3,s=3,p=2,h=2",
        "--engines",
        ",".join(engines),
        "--patterns",
        "uniform,hotspot,adversarial",
        "--loads",
        "0.2,1.0",
        "--time-us",
        "60",
        "--warmup-us",
        "10",
        "--out",
        str(tmp_path),
        timeout=900,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads((tmp_path / "compare.json").read_text())
    eng = {e["engine"]: e for e in doc["engines"]}
    assert list(eng) == list(engines) and doc["patterns"] == ["uniform", "hotspot", "adversarial"]
    dla = eng["dla"]
    assert dla["routed_by"] == "dla" and dla["vls_used"] == [0, 1] and not dla["credit_loop"]
    for e in eng.values():
        if e["routed_by"] != e["engine"]:
            assert e["skipped"], e  # said so, with OpenSM's reason
            continue
        assert set(e["curves"]) == {"uniform", "hotspot", "adversarial"}
        assert all(len(pts) == 2 for pts in e["curves"].values())
    # the throughput-against-load table for every pattern, one row per engine routed
    for pattern in ("uniform", "hotspot", "adversarial"):
        assert f"{pattern}: accepted traffic" in " ".join(r.stdout.split())


@pytest.mark.fabric
@pytest.mark.parametrize(
    "fabric, says",
    [
        # a hub switch with two spokes: a tree, no groups, cliques or global links
        (
            "fattree:leaves=2,spines=1,hosts=3",
            "and this fabric is no dragonfly: its 3 switches do not split into groups of one size, each cabled all "
            "to all (or a dragonfly+ group: leaves and their spines), every two groups cabled together "
            "(docs/groups.md); use uniform, stencil or hotspot traffic on it",
        ),
        ("fattree:leaves=1,spines=0,hosts=4", "and this fabric is a single group (1 switch), whose next group is"),
    ],
    ids=["hub-and-spokes", "one-switch"],
)
def test_adversarial_traffic_on_a_fabric_without_groups_says_what_the_pattern_needs(ibqos_cli, tmp_path, fabric, says):
    """Before: 'minhop: traffic: adversarial traffic needs a dragonfly: some groups are not
    joined by a global link: no partition into cliques of one size links every pair of groups'
    on a tree (groups, cliques and global links it does not have), said after every engine had
    routed; on one switch the pattern ran as every CA to every CA, itself included, and was
    reported as adversarial (exit 0). Now one line at --patterns after the first engine."""
    r = ibqos_cli(
        "compare-engines", fabric, "--engines", "minhop,dla", "--patterns", "uniform,adversarial", "--loads", "0.5",
        "--time-us", "20", "--warmup-us", "5", "--out", str(tmp_path / "out"), timeout=600,
    )  # fmt: skip
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "clique" not in r.stderr, r.stderr[-2000:]
    assert lines[0].startswith(
        "ibqos: error: --patterns: adversarial traffic sends every CA to the CAs of the next dragonfly group, "
    ), lines
    assert says in lines[0], lines
    assert not (tmp_path / "out" / "compare.json").exists()
