"""Planner: the plans meet their policies (checked by re-analysing the tables), and
infeasible policies are rejected with the constraint that breaks."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ibqos.arbiter.exact import analyze_exact
from ibqos.errors import InputError
from ibqos.plan import Plan, load_plan
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from ibqos.roles import ROLES

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


def check_plan_meets_policy(plan: Plan, policy) -> None:
    """Independent of the planner's own verdict: re-analyse every role's tables (the analyzer
    is pinned by docs/arbiter-vectors.json), and hold the plan's recorded shares to the policy.
    The simulator's arbiter measures the planned tables too (ci-sim/tests/test_sim_arbiter.py,
    test_planned_tables_deliver_the_policy_shares), which no fault shared by the Python
    analyzers and the planner passes."""
    f = policy.fabric
    vpc = f.vls_per_class
    fixed = sum(c.bandwidth for c in policy.classes if c.bandwidth != "rest")
    nrest = sum(c.bandwidth == "rest" for c in policy.classes)
    for role in ROLES:
        t = plan.vlarb.role(role)
        assert len(t.high) <= plan.fabric.high_cap and len(t.low) <= plan.fabric.low_cap
        assert all(1 <= w <= 255 for _, w in t.high + t.low)
        a = analyze_exact(t, f.mtu, f.accounting, f.rate_gbps)
        for i, c in enumerate(policy.classes):
            vls = [i * vpc + k for k in range(vpc)]
            want = (100 - fixed) / nrest if c.bandwidth == "rest" else c.bandwidth
            share = sum(a.per_vl[v].share for v in vls)
            assert abs(share - want) <= 0.5, (role, c.name, share, want)
            # the plan's own claim against the policy, not against the re-analysis above
            assert abs(plan.analysis[role]["per_class"][c.name]["share"] - want) <= 0.5, (role, c.name)
            if c.max_latency_us is not None:
                assert max(a.per_vl[v].worst_wait_us for v in vls) <= c.max_latency_us + 1e-9
            if c.max_distance is not None:
                assert max(a.per_vl[v].max_distance for v in vls) <= c.max_distance
            # DLA: every VL of a class (2, or 3 with fault_tolerance links) carries the same
            # entries, side by side, in VL order.
            if vpc > 1:
                for table in (t.high, t.low):
                    mine = [k for k, (vl, _) in enumerate(table) if vl in vls]
                    assert len(mine) % vpc == 0
                    for j in range(0, len(mine), vpc):
                        slot = mine[j : j + vpc]
                        assert slot == list(range(slot[0], slot[0] + vpc))
                        assert [table[k][0] for k in slot] == vls
                        assert len({table[k][1] for k in slot}) == 1


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_plan_and_meet(path, tmp_path):
    policy = load_policy(path)
    plan = make_plan(policy)
    check_plan_meets_policy(plan, policy)
    plan.save(tmp_path / "p.json")
    again = load_plan(tmp_path / "p.json")
    assert again.to_json() == plan.to_json()
    assert again.policy_sha256 == policy.sha256
    for c in again.classes:
        r = again.analysis["terminal"]["per_class"][c.name]
        assert r["meets_bandwidth"] and r["meets_latency"]


def test_four_class_sl_map_and_capacity_override():
    policy = load_policy(ROOT / "examples" / "four-class.yaml")
    plan = make_plan(policy)
    be = plan.class_by_name("BE_BK")
    assert be.default and be.sls == [0, 8] and be.vls == [6, 7]
    assert plan.sl2class[0] == plan.sl2class[8] == 3
    assert all(plan.sl2class[sl] == 3 for sl in range(16) if sl not in (1, 2, 3))
    big = make_plan(policy, cap=(64, 64))
    # OpenSM 3.3.23 programs entries 0-31 of a 64-entry table only: the plan says so.
    assert 8 < len(big.vlarb.terminal.high) <= 32 and big.fabric.high_cap == 32
    assert "OpenSM 3.3.23 cannot program entries 32-63" in big.notes[0]
    check_plan_meets_policy(big, policy)


def test_usable_entries_follow_opensm_block_sizes():
    from ibqos.planner import opensm_usable_entries

    assert [opensm_usable_entries(c) for c in (1, 8, 32, 33, 40, 63, 64)] == [1, 8, 32, 33, 40, 63, 32]


def write_policy(tmp_path: Path, doc: dict) -> Path:
    p = tmp_path / "policy.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


@st.composite
def feasible_policies(draw):
    routing = draw(st.sampled_from(["dla", "dla-links", "minhop"]))
    routing, ft = ("dla", "links") if routing == "dla-links" else (routing, "none")
    vpc = {"dla": 2, "minhop": 1}[routing] + (ft == "links")
    cap = draw(st.sampled_from([8, 16, 32, 64]))
    maxc = min(8 // vpc, cap // vpc)
    n = draw(st.integers(2, maxc))
    prios = draw(st.lists(st.sampled_from(["high", "low"]), min_size=n, max_size=n))
    raw = draw(st.lists(st.integers(1, 10), min_size=n, max_size=n))
    shares = [round(100 * r / sum(raw), 1) for r in raw]
    if any(s < 5 for s in shares):
        shares = [100 / n] * n
        shares = [round(s, 1) for s in shares]
    low = sum(s for s, p in zip(shares, prios, strict=True) if p == "low")
    if 0 < 100 - low < 25:  # keep the low table within what one turn can carry
        prios = ["high"] * n
    if 0 < low < 20:
        # a small low share is served in VLHighLimit turns (4 KB units): five high classes
        # over 16.5 % low was measured 15.79 % at 32 entries, an honest refusal, not feasible
        prios = ["high"] * n
    classes = []
    for i in range(n):
        c = {"name": f"c{i}", "priority": prios[i], "bandwidth": shares[i]}
        if i == n - 1:
            c["bandwidth"], c["default"] = "rest", True
        classes.append(c)
    mtu = draw(st.sampled_from([1024, 2048, 4096]))
    return {
        "fabric": {
            "rate": "EDR",
            "mtu": mtu,
            "data_vls": 8,
            "routing": routing,
            "fault_tolerance": ft,
            "vlarb_cap": {"high": cap, "low": cap},
        },
        "classes": classes,
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=feasible_policies())
def test_random_feasible_policies_are_met(doc, tmp_path):
    policy = load_policy(write_policy(tmp_path, doc))
    check_plan_meets_policy(make_plan(policy), policy)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=feasible_policies(), kind=st.sampled_from(["latency", "low-share", "distance"]))
def test_random_infeasible_policies_say_why(doc, kind, tmp_path):
    cls = doc["classes"][0]
    if kind == "latency":
        # Below mtu*(1-f)/f: no table can serve a VL with share f more often.
        cls["max_latency_us"] = 0.01
        expect = "max_latency_us"
    elif kind == "low-share":
        for c in doc["classes"]:
            c["priority"] = "low"
        cls["priority"], cls["bandwidth"] = "high", 3
        for c in doc["classes"][1:-1]:
            c["bandwidth"] = round(97 / max(1, len(doc["classes"]) - 1), 1)
        expect = "at most"
    else:
        for c in doc["classes"]:
            c["priority"] = "high"
        cls["max_distance"] = 1  # another class's entries always sit in between
        expect = "max_distance"
    policy = load_policy(write_policy(tmp_path, doc))
    with pytest.raises(InputError) as e:
        make_plan(policy)
    msg = str(e.value)
    assert "\n" not in msg and expect in msg
    assert str(tmp_path / "policy.yaml") in msg


# ---- fault_tolerance: links (dla's third VL per class) ------------------------------------


def _classes(n: int) -> list[dict]:
    out = [{"name": f"c{i}", "bandwidth": round(100 / n, 1) if i < n - 1 else "rest"} for i in range(n)]
    out[-1]["default"] = True
    return out


def test_links_stride_three_vls_per_class(tmp_path):
    doc = {
        "fabric": {"data_vls": 15, "routing": "dla", "fault_tolerance": "links", "vlarb_cap": {"high": 64, "low": 64}},
        "classes": _classes(5),
    }
    policy = load_policy(write_policy(tmp_path, doc))
    plan = make_plan(policy)
    assert [c.vls for c in plan.classes] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11], [12, 13, 14]]
    assert plan.fabric.vls_per_class == 3 and plan.fabric.fault_tolerance == "links"
    assert plan.fabric.classes_fit == {"none": 7, "links": 5}
    # SL -> the class's first VL; every VL of every class appears in the tables
    assert all(plan.sl2vl[sl] == 3 * plan.sl2class[sl] for sl in range(16))
    t = plan.vlarb.terminal
    assert {vl for vl, _ in t.high + t.low} == set(range(15))
    check_plan_meets_policy(plan, policy)


def test_links_keeps_the_shares_of_the_same_policy_without_it(tmp_path):
    """The reservation moves VLs, never shares: per class, the exact analysis agrees."""
    doc = yaml.safe_load((ROOT / "examples" / "two-class.yaml").read_text())
    plain = make_plan(load_policy(write_policy(tmp_path, doc)))
    doc["fabric"]["fault_tolerance"] = "links"
    links = make_plan(load_policy(write_policy(tmp_path, doc)))
    for role in ROLES:
        for c in plain.classes:
            a = plain.analysis[role]["per_class"][c.name]["share"]
            b = links.analysis[role]["per_class"][c.name]["share"]
            assert abs(a - b) <= 0.5, (role, c.name, a, b)
    assert [c.vls for c in plain.classes] == [[0, 1], [2, 3]]
    assert [c.vls for c in links.classes] == [[0, 1, 2], [3, 4, 5]]
    assert plain.fabric.classes_fit == links.fabric.classes_fit == {"none": 4, "links": 2}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data_vls=st.sampled_from([1, 2, 4, 8, 15]), n=st.integers(1, 8), ft=st.sampled_from(["none", "links"]))
def test_class_budget_refusals_offer_fixes_that_work(data_vls, n, ft, tmp_path):
    """Too many classes for the VLs: one line, and every fix it offers plans."""
    import re

    doc = {
        "fabric": {"data_vls": data_vls, "routing": "dla", "fault_tolerance": ft, "vlarb_cap": {"high": 64, "low": 64}},
        "classes": _classes(n),
    }
    vpc = 3 if ft == "links" else 2
    path = write_policy(tmp_path, doc)
    if n * vpc <= data_vls:
        plan = make_plan(load_policy(path))
        assert plan.fabric.classes_fit[ft] == data_vls // vpc >= n
        return
    with pytest.raises(InputError) as e:
        load_policy(path)
    msg = str(e.value)
    assert "\n" not in msg and f"{n} classes but only {data_vls // vpc} fit" in msg
    fixes = []
    if m := re.search(r"merge classes down to (\d+)", msg):
        fixes.append(("classes", _classes(int(m.group(1)))))
    if m := re.search(r"raise fabric.data_vls to (\d+)", msg):
        fixes.append(("data_vls", int(m.group(1))))
    if "set fabric.fault_tolerance: none" in msg:
        fixes.append(("fault_tolerance", "none"))
    assert fixes or (data_vls // vpc == 0 and n * vpc > 15)
    for key, value in fixes:
        fixed = yaml.safe_load(yaml.safe_dump(doc))
        if key == "classes":
            fixed["classes"] = value
        else:
            fixed["fabric"][key] = value
        make_plan(load_policy(write_policy(tmp_path, fixed)))
