"""The verifier and the simulator read a fabric through one compiled index
(ibqos.fabric.index): on the fabrics where their old rules disagreed they now judge alike.

Before: the verifier counted a CA port with a LID but no link as an endpoint (and reported
its routes lost) while the simulator skipped it; a missing switch or CA SL2VL table was VL 0
(a warning at most) to the verifier and an error to the simulator."""

from __future__ import annotations

import pytest
from ibqos.errors import InputError
from ibqos.fabric.model import NO_ROUTE, Node, Port
from ibqos.verify import verify_fabric
from ibqos_sim.sim import SimParams, TrafficSpec, compile_network, simulate
from simfabrics import IDENTITY4, config_a, star


def test_a_ca_port_without_a_link_is_no_endpoint_to_either():
    f = star(3, config_a())
    lonely = Node(guid=0x2FF, kind="ca", desc="lonely", nports=1)
    lonely.ports[1] = Port(num=1, guid=0x2FF, lid=9, op_vls=4)  # its cable is gone
    lonely.sl2vl[(0, 1)] = IDENTITY4
    f.nodes[lonely.guid] = lonely
    sw = f.nodes[0x100]
    sw.lft += [NO_ROUTE] * (10 - len(sw.lft))

    rep = verify_fabric(f)
    net = compile_network(f, rate_gbps=32, source=f.source)
    assert rep.ca_ports == net.n_endpoints == 3
    assert rep.ok and rep.pairs == rep.delivered == 6  # was: 6 routes to/from "lonely" lost
    res = simulate(net, TrafficSpec(process="cbr"), SimParams(warmup_us=20, time_us=150), 0.3)
    assert res.status == "done" and res.accepted_pct == pytest.approx(30, abs=1.5)  # all of 0.3 delivered


@pytest.mark.parametrize("where", ["switch", "ca"])
def test_a_missing_sl2vl_table_is_the_same_error_to_both(where):
    f = star(3, config_a())
    if where == "switch":
        del f.nodes[0x100].sl2vl[(1, 2)]  # was: VL 0, silently, to the verifier
        want = "switch sw0 in 1 out 2: SL2VL table missing"
    else:
        del f.nodes[0x201].sl2vl[(0, 1)]  # was: VL 0 with a warning, to the verifier
        want = "CA ca1 port 1: SL2VL table missing"
    f.was_read_from("star.json")  # both name the file the model came from, as loaded
    with pytest.raises(InputError) as by_verify:
        verify_fabric(f)
    with pytest.raises(InputError) as by_sim:
        compile_network(f, rate_gbps=32, source="star.json")
    assert str(by_verify.value) == str(by_sim.value)
    assert want in str(by_verify.value) and by_verify.value.field == "sl2vl"
    assert str(by_verify.value).startswith("star.json: ")


def test_no_sl2vl_anywhere_is_vl0_with_the_same_note_to_both():
    f = star(3, config_a())
    for n in f.nodes.values():
        n.sl2vl.clear()
    rep = verify_fabric(f)
    net = compile_network(f, rate_gbps=32, source=f.source)
    note = "no SL2VL tables in the model: every SL uses VL 0"
    assert note in rep.warnings and note in net.notes
    assert rep.vls_used == [0] and set(net.arrays["sl2vl_rows"].tolist()) == {0}
