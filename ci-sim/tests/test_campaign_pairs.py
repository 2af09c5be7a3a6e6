"""The fault campaign's expected CA-pair count is what ibqos.verify counts on OpenSM's dumps:
CA ports (two on a two-port CA), less those the faults cut off, whole leaves included
(ibqos_sim.campaign.expected_pairs). Checked by hand on a small fabric with a two-port CA, and
against verify on that fabric in ibsim after each fault."""

from __future__ import annotations

import pytest
from ibqos_sim.campaign import Campaign, expected_pairs, link_fault, switch_fault
from ibqos_sim.harness.topology import NodeSpec, Topology


def two_port_ca_fabric() -> Topology:
    """Three leaves under one spine; ca-a (the SM's) on leaf0, ca-b on leaf1, ca-c and ca-d on
    leaf2, and ca-2p with port 1 on leaf0 and port 2 on leaf1: 6 CA ports on 5 CAs."""
    t = Topology(name="two-port-ca")
    t.add(NodeSpec("ca-a", "Hca", 1))  # first in the net file: ibsim attaches OpenSM here
    t.add(NodeSpec("ca-2p", "Hca", 2))
    t.add(NodeSpec("ca-b", "Hca", 1))
    t.add(NodeSpec("ca-c", "Hca", 1))
    t.add(NodeSpec("ca-d", "Hca", 1))
    t.add(NodeSpec("spine0", "Switch", 3))
    for lf in range(3):
        t.add(NodeSpec(f"leaf{lf}", "Switch", 3))
        t.connect(f"leaf{lf}", 3, "spine0", lf + 1)
    t.connect("ca-a", 1, "leaf0", 1)
    t.connect("ca-2p", 1, "leaf0", 2)
    t.connect("ca-2p", 2, "leaf1", 2)
    t.connect("ca-b", 1, "leaf1", 1)
    t.connect("ca-c", 1, "leaf2", 1)
    t.connect("ca-d", 1, "leaf2", 2)
    return t


# fault -> CA ports OpenSM still reaches (counted by hand from the wiring above)
FAULTS = {
    "none": (lambda t: [], 6),
    # one port of the two-port CA: the CA keeps its other one
    "two-port-ca-link": (lambda t: [link_fault(t, "leaf1", 2, "ca-2p", 2)], 5),
    # leaf2's only uplink: the leaf, ca-c and ca-d are gone though no fault names them
    "leaf-cut-off": (lambda t: [link_fault(t, "leaf2", 3, "spine0", 3)], 4),
    # leaf1: ca-b and port 2 of ca-2p
    "switch": (lambda t: [switch_fault(t, "leaf1")], 4),
}


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_expected_pairs_count_ca_ports_the_sm_still_reaches(name):
    t = two_port_ca_fabric()
    faults, ports = FAULTS[name][0](t), FAULTS[name][1]
    assert expected_pairs(t, faults) == ports * (ports - 1)


@pytest.mark.fabric
def test_the_campaigns_expected_pairs_are_the_pairs_verify_counts(tmp_path, ibsim_fabric):
    t = two_port_ca_fabric()
    net = t.write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run", console=True) as h:
        sm = h.start_sm(engine="minhop", conf={"sweep_interval": 1, "qos": "TRUE"})
        c = Campaign(h, sm, t, tmp_path, ibdmchk=False)
        assert c.pristine_report.pairs == expected_pairs(t, []) == 30
        got = {}
        for name in ("two-port-ca-link", "leaf-cut-off", "switch"):
            o = c.run(FAULTS[name][0](t))
            got[name] = (o.degraded.pairs, o.degraded.delivered, o.expected_pairs)
    want = {name: (n * (n - 1),) * 3 for name, (_, n) in FAULTS.items() if name != "none"}
    assert got == want
