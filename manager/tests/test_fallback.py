"""The rendered fallback chain: on fabrics dla refuses, OpenSM routes with dfsssp (or lash),
and the routing in force is deadlock-free by both judges (ibqos verify with the SA's path SLs,
and ibdmchk), with the rendered SL2VL keeping the layer SLs apart; per data-VL count, the
chain is deadlock-free by `ibqos verify --live`, with every CA pair reachable."""

from __future__ import annotations

import re
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
from ibqos_sim.harness.topology import dragonfly, fat_tree
from vl_count_plans import linked_op_vls, render_count

pytestmark = pytest.mark.fabric

ROOT = Path(__file__).resolve().parents[2]
# two-class: with the class map as SL2VL (SL 0 and 2.. on one VL), dfsssp's layers collapse
# and its routing of a dragonfly has credit loops; the rendered identity keeps them apart.
POLICY = ROOT / "examples" / "two-class.yaml"

CASES = {
    "fat_tree": (fat_tree, {}, "ERR D1A0: dla: fabric refused"),
    "dragonfly72_lmc1": (lambda: dragonfly(4, 2, 2, 9), {"lmc": 1}, "ERR D1A1: dla: fabric refused"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_refused_fabric_falls_back_deadlock_free(ibqos_cli, tmp_path, case, ibsim_fabric):
    make, conf, refusal = CASES[case]
    files = render_plan(make_plan(load_policy(POLICY), cap=(8, 8)), tmp_path / "cfg")
    net = make().write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
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


# Per data-VL count (docs/fallback.md, "Per data-VL count"): (data VLs, fabric dla refuses) ->
# the engine that routes it; `ibqos verify --live` (the SA's path SLs) must find every pair
# delivered and no credit loop. 1 data VL has no dla plan (test_policy 23-dla-on-one-data-vl);
# 15 cannot run on ibsim (VLCap VL0-7).
PER_COUNT = {
    "8-df42-lmc1": (8, "df42", "dfsssp"),
    # the plugin settles the switch ports' OperVLs before falling back: dfsssp sees 4, not the
    # power-up 8, and keeps its SLs to 0-3
    "4-df42-lmc1": (4, "df42", "dfsssp"),
    "2-fat-tree": (2, "fat_tree", "dfsssp"),
    # dfsssp (ERR AD25) and lash (ERR 4D02) each need 3 VLs here; nue routes in 2 layers
    # (before it, OpenSM fell to minhop and verify found a credit loop)
    "2-df42-lmc1": (2, "df42", "nue"),
}


@pytest.mark.parametrize("case", PER_COUNT)
def test_fallback_per_data_vls_count(ibqos_cli, tmp_path, case, ibsim_fabric):
    data_vls, fab, engine = PER_COUNT[case]
    _, files = render_count(tmp_path, data_vls)
    text = files["opensm.conf"].read_text()
    assert f"routing_engine {DLA_CHAIN}\n" in text and f"nue_max_num_vls {data_vls}\n" in text
    topo, conf = (dragonfly(3, 2, 3, 7), {"lmc": 1}) if fab == "df42" else (fat_tree(), {})
    net = topo.write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run", console=False) as h:
        sm = h.start_sm(engine=DLA_CHAIN, plugin=True, conf=conf, conf_files=[files["opensm.conf"]])
        lines = sm.lines()
        assert any("dla: fabric refused" in ln.text for ln in lines)
        assert osmlog.configured_engines(lines)[-1:] == [engine]
        fabric = h.read_back()
        cp = ibqos_cli("verify", "--live", "--osm-log", sm.log, env=h.env, timeout=300)
    assert set(linked_op_vls(fabric).values()) == {data_vls}
    out = cp.stdout + cp.stderr
    assert cp.returncode == 0 and "CREDIT LOOP" not in out, out[-3000:]
    cas = sum(1 for _ in fabric.cas())
    assert f"delivered: {cas * (cas - 1)}/{cas * (cas - 1)}\n" in cp.stdout, out[-3000:]
    # the SA hands out layer SLs on the data VLs only, one VL each (identity SL2VL)
    used = re.search(r"SLs used ([0-9,]+), VLs used ([0-9,]+)", cp.stdout)
    assert used and used[1] == used[2] and max(map(int, used[1].split(","))) < data_vls, out[-3000:]
