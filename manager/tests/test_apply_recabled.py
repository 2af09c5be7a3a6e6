"""An SM host recabled while OpenSM was down: OpenSM's cache directory (guid2lid, neighbors)
and dla's stored group map still describe the old wiring. dla must route the new wiring (the
read-back verifies), and `ibqos apply` must not roll back for OpenSM's cache pruning: OpenSM
3.3.23 checks its neighbor cache only in osm_subn_init (subn_validate_neighbor, ERR
7512..7519), at its start, so those lines are logged before apply marks the log."""

from __future__ import annotations

import os

import pytest
from apply_helpers import make_plan_file, run_apply
from ibqos.osmlog import matching, parse
from ibqos.render import render_plan
from ibqos_sim.harness.topology import Topology, dragonfly

pytestmark = pytest.mark.fabric


def _with_spare_port(t: Topology) -> Topology:
    for sw in t.switches:
        sw.nports += 1  # unused on the old wiring: where a CA is moved to
    return t


def _recabled() -> Topology:
    """dragonfly(3,1,1) where sw-g0-s0 and sw-g1-s0 traded places (every cable moved: the
    groups change) and ca-g2-s0-h0 moved to sw-g3-s0's spare port; same GUIDs, node order."""
    t = _with_spare_port(dragonfly(3, 1, 1))
    x, y = "sw-g0-s0", "sw-g1-s0"
    other = {x: y, y: x}
    cables = {n: dict(t.nodes[n].links) for n in (x, y)}
    for n in (x, y):
        for port in list(t.nodes[n].links):
            t.disconnect(n, port)
    for n in (x, y):
        for port, (peer, pport) in cables[n].items():
            if port not in t.nodes[other[n]].links:  # the x-y cable is met from both ends
                t.connect(other[n], port, other.get(peer, peer), pport)
    t.disconnect("ca-g2-s0-h0", 1)
    t.connect("ca-g2-s0-h0", 1, "sw-g3-s0", t.nodes["sw-g3-s0"].nports)
    return t


def test_apply_after_a_recabling_while_opensm_was_down(ibqos_cli, ibsim_fabric, tmp_path):
    _, path_a = make_plan_file(tmp_path, "a", 40)
    plan_b, _ = make_plan_file(tmp_path, "b", 60)  # the one OpenSM starts on
    conf = render_plan(plan_b, tmp_path / "cfg")["opensm.conf"]
    run = tmp_path / "run"  # OSM_CACHE_DIR of every OpenSM below: one SM host's cache
    old = _with_spare_port(dragonfly(3, 1, 1)).write_net(tmp_path / "old.net")
    with ibsim_fabric(old, run_dir=run, ibsim="debian") as h:
        h.start_sm(engine="dla,minhop", plugin=True, conf_files=[conf]).stop()
    stored_old = (run / "ibqos-dla-groups").read_text()

    with ibsim_fabric(_recabled().write_net(tmp_path / "new.net"), run_dir=run, ibsim="debian") as h:
        # the first start records the new links beside the stale ones; the next start prunes
        h.start_sm(engine="dla,minhop", plugin=True, conf_files=[conf]).stop()
        sm = h.start_sm(engine="dla,minhop", plugin=True, conf_files=[conf])
        assert matching(parse(sm.log), r"ERR 7518: neighbor does not point back"), "no stale cache: no test"
        assert (run / "ibqos-dla-groups").read_text() != stored_old  # dla rediscovered the groups

        r = run_apply(ibqos_cli, h, sm, path_a)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "the fabric equals the plan" in r.stdout, r.stdout

        v = ibqos_cli("verify", "--live", "--plan", path_a, env=dict(os.environ, **h.env))
        assert v.returncode == 0, v.stdout + v.stderr
        assert "minimal routes: 132/132" in v.stdout and "acyclic" in v.stdout, v.stdout
        sm.stop()
