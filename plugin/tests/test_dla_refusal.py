"""Fabrics dla must refuse: one refusal line naming the switch/group/pair and the rule, then
OpenSM routes with the next engine and keeps running. (Degraded dragonflies are not among them:
test_dla_degraded.py.)"""

from __future__ import annotations

import json

import pytest
from dla_testlib import refusals, start_dla
from ibqos import osmlog
from ibqos_sim.harness.topology import dfplus, dragonfly, fat_tree
from ibqos_sim.harness.wiring import without_cable

pytestmark = pytest.mark.fabric

CASES = {
    "fat_tree": (fat_tree, {}, ["do not split into groups that are cliques of 2", "[rule: "]),
    "lmc": (lambda: dragonfly(4, 2, 2), {"lmc": 1}, ["LMC 1 is set", "[rule: lmc 0]"]),
    # a fresh start on a dragonfly+ whose group of two leaves lost a different spine on each:
    # two readings as groups of one leaf overlap (docs/groups.md, step 0)
    "dfplus_ambiguous": (
        lambda: without_cable(without_cable(dfplus(2, 3, 2, 1), "sw-g1-l0", "sw-g1-s2"), "sw-g1-l1", "sw-g1-s0"),
        {},
        ["the dragonfly+ reading is ambiguous", '"sw-g1-l', "[rule: groups of one leaf do not overlap]"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_refused_fabric_falls_back_to_minhop(tmp_path, case, ibsim_fabric):
    make, conf, wants = CASES[case]
    net = make().write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        sm = start_dla(h, conf=conf)
        lines = sm.lines()
        assert sm.alive()
        found = refusals(lines)
        assert len(found) == 1, found
        for want in wants:
            assert want in found[0], found[0]
        assert any("minhop tables configured on all switches" in ln.text for ln in lines)
        assert not any("dla tables configured" in ln.text for ln in lines)
        assert not osmlog.hop_fill_passes(lines)  # minhop filled its own hop rows, dla none
        assert sm.alive()
        # the record says the same for tools, with nothing programmed by dla
        record = json.loads((sm.dumps / "ibqos-dla.json").read_text())
        assert record["engine"]["status"] == "refused" and record["ports"] == []
        assert record["engine"]["error"] == ("D1A1" if case == "lmc" else "D1A0")
        assert all(want in record["engine"]["reason"] for want in wants)


def test_too_few_vls_refused(tmp_path, ibsim_fabric):
    """max_op_vls 1 leaves VL0 only: DLA needs VL1 on local ports, so it refuses."""
    net = dragonfly(4, 2, 2).write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        sm = start_dla(h, conf={"max_op_vls": 1})
        lines = sm.lines()
        assert sm.alive()
        assert any(
            "ERR D1A2: dla: fabric refused: switch" in ln.text and "(local) runs 1 data VL(s) but needs 2" in ln.text
            for ln in lines
        )
        assert any("minhop tables configured on all switches" in ln.text for ln in lines)
