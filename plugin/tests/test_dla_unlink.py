"""A global link goes down under a running OpenSM: dla reroutes over the pair's other link, or
through a third group when it was the pair's only link, and goes back to the pristine routes
when the link comes back."""

from __future__ import annotations

import pytest
from dla_testlib import refusals, start_dla
from ibqos.verify import verify_fabric
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly

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


def test_global_link_down_with_spare_link_reroutes(tmp_path, ibsim_fabric):
    topo = dragonfly(*DRAGONFLY_SIZES[42])  # some group pairs have two global links
    links = global_links(topo)
    pairs = [lk[4] for lk in links]
    victim = next(lk for lk in links if pairs.count(lk[4]) > 1)
    net = topo.write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run", console=True) as h:
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
        fabric = sm.load_dumps()
    sw = next(n for n in fabric.switches() if n.desc == victim[0])
    assert sw.ports.get(victim[1]) is None or sw.ports[victim[1]].remote is None
    report = verify_fabric(fabric)
    assert report.ok, report.defects()
    assert report.delivered == report.pairs == 42 * 41
    assert report.vls_used == [0, 1] and max(report.hops) <= 3


def test_only_global_link_of_a_pair_down_reroutes_through_a_third_group(tmp_path, ibsim_fabric):
    topo = dragonfly(*DRAGONFLY_SIZES[72])  # one global link per group pair
    victim = global_links(topo)[0]
    net = topo.write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run", console=True) as h:
        sm = start_dla(h)
        up = sm.sweeps()
        pristine = sm.load_dumps()
        h.console(f'Unlink "{victim[0]}"[{victim[1]}]')
        sm.wait_for_sweeps(up + 1, timeout=60)
        sm.wait_for_log(r"[1-9][0-9]* through a third group", timeout=60)
        degraded = sm.load_dumps()
        up = sm.sweeps()
        h.console(f'Link "{victim[0]}"[{victim[1]}] "{victim[2]}"[{victim[3]}]')
        sm.wait_for_sweeps(up + 1, timeout=60)
        restored = sm.load_dumps()
        lines = sm.lines()
        assert sm.alive()
    assert not refusals(lines)
    report = verify_fabric(degraded)
    assert report.ok, report.defects()
    assert report.delivered == report.pairs == 72 * 71
    assert report.cdg_acyclic and set(report.vls_used) <= {0, 1, 2}
    assert max(report.hops) > 3  # some routes cross a third group
    again = verify_fabric(restored)
    assert again.ok and again.vls_used == [0, 1] and max(again.hops) <= 3
    assert {n.guid: n.lft for n in restored.switches()} == {n.guid: n.lft for n in pristine.switches()}
