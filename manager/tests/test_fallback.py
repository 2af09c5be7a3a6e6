"""The rendered fallback chain: on fabrics dla refuses, OpenSM routes with dfsssp (or lash),
and the routing in force is deadlock-free by both judges (ibqos verify with the SA's path SLs,
and ibdmchk), with the rendered SL2VL keeping the layer SLs apart."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from ibqos import osmlog
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from ibqos.render import render_plan
from ibqos.render.fallback import DLA_CHAIN
from ibqos.verify import verify_fabric
from ibqos.verify.ibdmchk import run_ibdmchk
from ibqos.verify.sa_paths import query_path_sls
from ibqos_sim.harness import Harness
from ibqos_sim.topology import dragonfly, fat_tree

pytestmark = pytest.mark.fabric

ROOT = Path(__file__).resolve().parents[2]
# two-class: with the class map as SL2VL (SL 0 and 2.. on one VL), dfsssp's layers collapse
# and its routing of a dragonfly has credit loops; the rendered identity keeps them apart.
POLICY = ROOT / "examples" / "two-class.yaml"

CASES = {
    "fat_tree": (lambda: fat_tree(), {}, "ERR D1A0: dla: fabric refused"),
    "dragonfly72_lmc1": (lambda: dragonfly(4, 2, 2, 9), {"lmc": 1}, "ERR D1A1: dla: fabric refused"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_refused_fabric_falls_back_deadlock_free(tmp_path, case):
    make, conf, refusal = CASES[case]
    files = render_plan(make_plan(load_policy(POLICY), cap=(8, 8)), tmp_path / "cfg")
    net = make().write_net(tmp_path / "fabric.net")
    with Harness(net, run_dir=tmp_path / "run") as h:
        sm = h.start_sm(engine=DLA_CHAIN, plugin=True, conf=conf, conf_files=[files["opensm.conf"]])
        lines = sm.lines()
        assert any(refusal in ln.text for ln in lines)
        assert osmlog.configured_engines(lines)[-1:] == ["dfsssp"], osmlog.configured_engines(lines)
        fabric = h.read_back()
        psl = query_path_sls(fabric, h.env)
        assert len(set(psl.by_lids.values())) > 1  # dfsssp's layers, not one QoS SL
        report = verify_fabric(fabric, path_sls=psl)
        assert report.delivered == report.pairs > 0
        assert report.cdg_acyclic, " → ".join(report.cycle)
        assert len(report.vls_used) > 1
        with tempfile.TemporaryDirectory() as work:
            cross = run_ibdmchk(sm.dumps, fabric, work, path_sls=psl)
        assert not cross.credit_loops, cross.output[-2000:]
        assert sm.alive()
