"""A global link goes down under a running OpenSM: dla reroutes when the group pair keeps
another global link, and refuses (minhop takes over) when it was the pair's only link."""

from __future__ import annotations

import pytest

from ibqos.fabric.dumps import load_dumps
from ibqos.verify import verify_fabric
from ibqos_sim.harness import Harness
from ibqos_sim.topology import DRAGONFLY_SIZES, dragonfly

from dla_testlib import refusals, start_dla

pytestmark = pytest.mark.fabric


def global_links(topo):
    """(switch, port, peer switch, peer port, group pair) for every inter-group link."""
    out = []
    for a, pa, b, pb in topo.links():
        na, nb = topo.nodes[a], topo.nodes[b]
        if na.kind == nb.kind == "Switch" and na.group != nb.group:
            out.append((a, pa, b, pb, frozenset((na.group, nb.group))))
    return out


def count(lines, text):
    return sum(text in ln.text for ln in lines)


def test_global_link_down_with_spare_link_reroutes(tmp_path):
    topo = dragonfly(*DRAGONFLY_SIZES[42])          # some group pairs have two global links
    links = global_links(topo)
    pairs = [lk[4] for lk in links]
    victim = next(lk for lk in links if pairs.count(lk[4]) > 1)
    net = topo.write_net(tmp_path / "fabric.net")
    with Harness(net, run_dir=tmp_path / "run", console=True) as h:
        sm = start_dla(h)
        assert count(sm.lines(), "dla tables configured") == 1
        up = sm.sweeps()
        h.console(f'Unlink "{victim[0]}"[{victim[1]}]')
        sm.wait_for_log(r"dla tables configured", timeout=60)
        sm.wait_for_sweeps(up + 1, timeout=60)
        wait_lines = sm.lines()
        assert count(wait_lines, "building routing with 'dla'") >= 2
        assert count(wait_lines, "dla tables configured") >= 2
        assert not refusals(wait_lines)
        assert sm.alive()
        fabric = load_dumps(sm.dumps)
    sw = next(n for n in fabric.switches() if n.desc == victim[0])
    assert sw.ports.get(victim[1]) is None or sw.ports[victim[1]].remote is None
    report = verify_fabric(fabric)
    assert report.ok, report.defects()
    assert report.delivered == report.pairs == 42 * 41
    assert report.vls_used == [0, 1] and max(report.hops) <= 3


def test_only_global_link_of_a_pair_down_refuses(tmp_path):
    topo = dragonfly(*DRAGONFLY_SIZES[72])          # one global link per group pair
    victim = global_links(topo)[0]
    net = topo.write_net(tmp_path / "fabric.net")
    with Harness(net, run_dir=tmp_path / "run", console=True) as h:
        sm = start_dla(h)
        assert count(sm.lines(), "dla tables configured") == 1
        h.console(f'Unlink "{victim[0]}"[{victim[1]}]')
        line = sm.wait_for_log(r"ERR D1A0: dla: fabric refused", timeout=60)
        sm.wait_for_log(r"minhop tables configured on all switches", timeout=60)
        assert "are not joined by any global link [rule: every pair of groups is linked]" in line
        assert sm.alive()
