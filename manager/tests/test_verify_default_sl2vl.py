"""`ibqos verify` on the dumps of a production SM with `qos FALSE`: OpenSM then programs no
SL2VL and writes no opensm-sl2vl.dump. verify assumes OpenSM's default mapping with a note
(as ibdmchk assumes one) instead of refusing, and the assumption is what the ports hold."""

from __future__ import annotations

import json

import pytest
from ibqos.fabric.dumps import OSM_DEFAULT_SL2VL, SL2VL_DUMP, assume_default_sl2vl, load_dumps
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly

pytestmark = pytest.mark.fabric


def test_qos_false_dumps_are_verified_on_opensms_default_sl2vl(ibqos_cli, tmp_path, ibsim_fabric):
    net = dragonfly(*DRAGONFLY_SIZES[42]).write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        plain = h.run_sm(engine="minhop", conf={"qos": "FALSE"}, name="plain")
        live = h.read_back(save=False)  # what the ports hold with no SL2VL programmed
        qos = h.run_sm(engine="minhop", conf={"qos": "TRUE"}, name="qos")  # keys to compare
    assert not (plain.dumps / SL2VL_DUMP).exists()

    assumed = load_dumps(plain.dumps, require_sl2vl=False)
    assert assume_default_sl2vl(assumed) > 0
    # the same (node, in, out) tables OpenSM dumps when it programs SL2VL ...
    dumped = load_dumps(qos.dumps)
    assert {(g, k) for g, n in assumed.nodes.items() for k in n.sl2vl} == {
        (g, k) for g, n in dumped.nodes.items() for k in n.sl2vl
    }
    # ... holding what every port of the fabric holds when OpenSM programmed none
    held = {(g, k): v for g, n in live.nodes.items() for k, v in n.sl2vl.items()}
    for g, n in assumed.nodes.items():
        for k, v in n.sl2vl.items():
            assert held[g, k] == v == OSM_DEFAULT_SL2VL, (n.desc, k, held[g, k])

    cp = ibqos_cli("verify", plain.dumps, "--json", "--ibdmchk", timeout=300)
    assert cp.returncode == 1, cp.stderr  # minhop on a dragonfly: a credit loop, not an input error
    notes = [ln for ln in cp.stderr.splitlines() if ln.startswith("note: ")]
    assert len(notes) == 1 and SL2VL_DUMP in notes[0] and "qos FALSE" in notes[0] and "default" in notes[0]
    doc = json.loads(cp.stdout)
    assert doc["cdg_acyclic"] is False and doc["unreachable"] == 0 and doc["vls_used"] == [0]
    assert doc["ibdmchk"]["credit_loops"] is True and doc["ibdmchk"]["agrees"] is True
    assert "CREDIT LOOP: routing in force (minhop)" in cp.stderr
    # the defect leaves as one exception, mapped to exit 1 and one line in ibqos_app.cli
    assert (
        cp.stderr.strip().splitlines()[-1]
        == "ibqos: error: verify: credit loop: the channel dependency graph has a cycle"
    )
