"""A fresh OpenSM (no stored group map) on a dragonfly+ that is already degraded when it
starts: one leaf-spine link, one spine or one global link missing, a leaf without hosts, a
group of one leaf. dla must find the groups itself (docs/groups.md, step 0: near-twins,
groups of one leaf) and route deadlock-free
within the VLs it uses when the same fault strikes after a pristine boot (its stored map);
where every destination is present at boot (a link fault), with the same LFTs too. Repairing
the fault gives the pristine LFTs.

One harness per case, so OpenSM keeps its LIDs (guid2lid in the run directory) across its
starts: the degraded boot (SM 1), the repair, then a pristine boot (SM 2, the reference) and
the same fault on it, routed on the map SM 2 stored. The ground truth (which link is a
leaf-spine link, which switch a spine) is the generator's, never what dla found.
"""

from __future__ import annotations

import json
import re

import pytest
from dla_testlib import refusals, start_dla
from ibqos import osmlog
from ibqos.fabric.model import Fabric
from ibqos.faultspec import ResolvedFault
from ibqos.render.fallback import DLA_CHAIN, fallback_options
from ibqos_sim.campaign import Campaign, expected_pairs, link_fault, switch_fault
from ibqos_sim.harness import Harness
from ibqos_sim.harness.topology import Topology, dfplus
from ibqos_sim.harness.wiring import dfplus_few_leaves, wired_dfplus

pytestmark = pytest.mark.fabric

GROUPS_LINE = re.compile(r"dla: (\d+) groups \(([^)]*)\)")
SM_CONF = {"sweep_interval": 1, **fallback_options(8)}


def hostless(leaf: int) -> list[int]:
    """dfp42's host counts (2 per leaf) with leaf `leaf` (in generator order) left empty."""
    counts = [2] * 21
    counts[leaf] = 0
    return counts


def link(topo: Topology, a: str, b: str) -> ResolvedFault:
    """The first cable from switch a to switch b, whatever port numbers the wiring gave it."""
    pa, (_, pb) = next((p, peer) for p, peer in sorted(topo.nodes[a].links.items()) if peer[0] == b)
    return link_fault(topo, a, pa, b, pb)


def global_link(topo: Topology, spine: str) -> ResolvedFault:
    """The spine's first global link (to a switch of another group)."""
    nodes = topo.nodes
    peers = sorted(p for p, _ in nodes[spine].links.values() if nodes[p].kind == "Switch")
    return link(topo, spine, next(p for p in peers if nodes[p].group != nodes[spine].group))


FABRICS = {
    "dfp42": lambda: dfplus(3, 3, 2, 2),
    "dfp42_shuffled": lambda: wired_dfplus(3, 3, 2, 2, seed=5, shuffle=True),
    "dfp42_hostless": lambda: wired_dfplus(3, 3, 2, 2, hosts=hostless(4)),  # sw-g1-l1 has none
    "dfp30": lambda: dfplus(3, 3, 2, 2, 5),  # several globals per group pair
    "dfp40_one_leaf": lambda: dfplus_few_leaves(dfplus(3, 3, 2, 2), 3, 1),  # group 3: one leaf
    "dfp41_two_leaves": lambda: dfplus_few_leaves(dfplus(3, 3, 2, 2), 3, 2),  # group 3: two
}
# (fabric, fault) -> the fault on that fabric; None: nothing missing but the hosts
CASES = {
    ("dfp42", "leaf_spine"): lambda t: link(t, "sw-g2-l1", "sw-g2-s0"),
    ("dfp42", "spine"): lambda t: switch_fault(t, "sw-g3-s1"),
    ("dfp42", "global"): lambda t: link(t, "sw-g1-s0", "sw-g6-s0"),
    ("dfp42_shuffled", "leaf_spine"): lambda t: link(t, "sw-g4-l2", "sw-g4-s1"),
    ("dfp42_shuffled", "spine"): lambda t: switch_fault(t, "sw-g5-s0"),
    ("dfp42_shuffled", "global"): lambda t: global_link(t, "sw-g2-s1"),
    ("dfp42_hostless", "none"): lambda t: None,
    ("dfp42_hostless", "leaf_spine"): lambda t: link(t, "sw-g1-l1", "sw-g1-s2"),
    ("dfp30", "leaf_spine"): lambda t: link(t, "sw-g3-l0", "sw-g3-s2"),
    ("dfp30", "spine"): lambda t: switch_fault(t, "sw-g2-s2"),
    ("dfp30", "global"): lambda t: global_link(t, "sw-g4-s0"),
    ("dfp40_one_leaf", "none"): lambda t: None,
    ("dfp40_one_leaf", "global"): lambda t: global_link(t, "sw-g3-s1"),
    ("dfp40_one_leaf", "spine"): lambda t: switch_fault(t, "sw-g3-s2"),
    ("dfp41_two_leaves", "leaf_spine"): lambda t: link(t, "sw-g3-l1", "sw-g3-s2"),
}
# a group of two leaves has no halves to keep the phases apart: a leaf-spine fault there needs
# a 4th VL (plugin/README.md), refused at boot as on the stored map; the fallback routes
NEEDS_4_VLS = {("dfp41_two_leaves", "leaf_spine")}


def lfts(fabric: Fabric) -> dict[int, list[int]]:
    return {n.guid: list(n.lft) for n in fabric.switches()}


@pytest.mark.parametrize("fabric_name, kind", sorted(CASES), ids=["-".join(k) for k in sorted(CASES)])
def test_fresh_start_on_a_degraded_dfplus_is_routed_by_dla(tmp_path, fabric_name, kind):
    topo = FABRICS[fabric_name]()
    fault = CASES[(fabric_name, kind)](topo)
    faults = [fault] if fault else []
    expected = expected_pairs(topo, faults)
    net = topo.write_net(tmp_path / "fabric.net")
    out: dict = {"case": f"{fabric_name}-{kind}"}
    with Harness(net, run_dir=tmp_path / "run", console=True) as h:
        if fault:  # down before any SM runs: OpenSM's first sweep sees the fabric degraded
            h.unlink(fault.node, fault.port)
        sm = start_dla(h, engine=DLA_CHAIN, conf=SM_CONF, name="sm-boot")
        try:
            lines = sm.lines()
            sources = [m.group(2) for ln in lines if (m := GROUPS_LINE.search(ln.text))]
            # a Campaign's starting snapshot, judged by both judges: here the degraded boot
            boot = Campaign(h, sm, topo, tmp_path / "boot")
            r = boot.pristine_report
            out["boot"] = {
                "engine": osmlog.configured_engines(lines)[-1:],
                "refused": refusals(lines)[-1:],
                "groups": sources[-1] if sources else None,
                "vls": list(r.vls_used),
                "clean": r.ok and r.cdg_acyclic and not boot.pristine_ibdmchk,
                "pairs": [r.delivered, r.pairs, expected],
            }
            if fault:
                sweep, fabric = boot.settle(faults, down=False)
                out["repair"] = {"engine": sweep.engine, "lfts": lfts(fabric)}
        finally:
            sm.stop()
        # the reference (the fault repaired above): a pristine boot, then the same fault on
        # the map it stored
        sm = start_dla(h, engine=DLA_CHAIN, conf=SM_CONF, name="sm-pristine")
        try:
            ref = Campaign(h, sm, topo, tmp_path / "reference")
            stored_lfts = ref.pristine_lfts
            if fault:
                o = ref.run(faults, restore=False)
                stored_lfts = lfts(sm.load_dumps())
                out["stored"] = {
                    "engine": o.degraded.engine,
                    "vls": o.degraded.vls_used,
                    "refused": o.degraded.refusals,
                    "problems": o.problems,
                }
            else:
                engine = (osmlog.configured_engines(sm.lines()) or [None])[-1]
                out["stored"] = {"engine": engine, "vls": list(ref.pristine_report.vls_used), "problems": []}
        finally:
            sm.stop()
    out["boot_lfts_as_stored"] = boot.pristine_lfts == stored_lfts
    if fault:
        out["repaired_lfts_pristine"] = out["repair"].pop("lfts") == ref.pristine_lfts
    print("dfpboot " + json.dumps(out))
    b, st = out["boot"], out["stored"]
    assert b["clean"] and b["pairs"][0] == b["pairs"][1] == b["pairs"][2], out
    if fault:
        assert out["repair"]["engine"] == "dla" and out["repaired_lfts_pristine"], out
    if (fabric_name, kind) in NEEDS_4_VLS:
        assert st["engine"] != "dla" and "need 4 VLs per class" in st["refused"][0], out
        assert b["engine"] != ["dla"] and "need 4 VLs per class" in b["refused"][0], out
        return
    assert b["engine"] == ["dla"] and b["groups"] and b["groups"].startswith("discovered"), out
    assert st["engine"] == "dla" and not st["problems"], out
    assert len(b["vls"]) <= len(st["vls"]), out
    if not fault or fault.kind != "switch":  # every destination present at boot: same numbering
        assert out["boot_lfts_as_stored"], out
