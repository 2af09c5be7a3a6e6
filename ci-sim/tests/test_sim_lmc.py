"""The simulator on a fabric with LMC 1, programmed by real OpenSM (minhop) on ibsim and read
back: packets go to base LIDs only, so the routes to a port's other LIDs are never exercised,
and the result says so."""

from __future__ import annotations

import pytest
from ibqos.verify import verify_fabric
from ibqos_sim.harness import Harness
from ibqos_sim.harness.topology import fat_tree
from ibqos_sim.sim import SimParams, TrafficSpec, simulate

pytestmark = pytest.mark.fabric

SHORT = SimParams(warmup_us=10, time_us=50)
NOTE = "LMC 1: packets go to each CA port's base LID only; the routes to its other 1 LID carry no simulated traffic"


def test_a_bad_route_to_a_second_lid_passes_the_simulation_which_says_it_sent_to_base_lids(tmp_path):
    net = fat_tree(leaves=2, spines=1, hosts=2).write_net(tmp_path / "fabric.net")
    with Harness(net, run_dir=tmp_path / "run") as h:
        h.run_sm(engine="minhop", conf={"qos": "TRUE", "lmc": 1})
        fabric = h.read_back(save=False)
    assert {p.lmc for n in fabric.cas() for p in n.ports.values()} == {1}
    good = simulate(fabric, TrafficSpec(), SHORT, 0.5)
    assert good.status == "done" and good.counters["dropped_unrouted"] == 0
    assert any(n.startswith(NOTE) for n in good.notes), good.notes

    # ca-l1-h0's leaf sends its second LID back up to the spine: a loop (what verify's own
    # LMC test breaks); the simulation never routes to that LID, and delivers everything
    ca = next(n for n in fabric.cas() if n.desc == "ca-l1-h0")
    leaf = fabric.nodes[ca.ports[1].remote[0]]
    up = next(num for num, p in leaf.ports.items() if num and p.remote and fabric.nodes[p.remote[0]].kind == "switch")
    assert leaf.lft[ca.ports[1].lid + 1] != up
    leaf.lft[ca.ports[1].lid + 1] = up
    bad = simulate(fabric, TrafficSpec(), SHORT, 0.5)
    assert bad.status == "done" and bad.counters["dropped_unrouted"] == 0 and bad.counters["delivered"] > 0
    assert any(n.startswith(NOTE) for n in bad.notes), bad.notes
    assert verify_fabric(fabric).lost == {"loop": 3}  # the 3 other CAs' routes to that LID
