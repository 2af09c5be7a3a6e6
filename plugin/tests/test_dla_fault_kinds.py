"""Faults that are not one link taken down and brought back (test_dla_faults has those): a
global link that flaps five times faster than OpenSM sweeps, and a CA recabled to another
switch's spare port (same GUID, same LID, another group). Real OpenSM with the rendered chain
and the plugin on the 42-CA dragonfly, judged by ibqos.verify from the dumps.

redteam: both held when tried; kept so a change to the group cache or the per-sweep VL work
that breaks them is seen."""

from __future__ import annotations

from pathlib import Path

import pytest
from dla_testlib import start_dla
from ibqos.render.fallback import DLA_CHAIN, fallback_options
from ibqos.verify import verify_fabric
from ibqos_sim.harness.fabric import ibsim_node_id
from ibqos_sim.harness.resweep import Resweep, SweepMark, sweep_mark, wait_resweep
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly

pytestmark = pytest.mark.fabric

FLAPS = 5
SPARE = ("sw-g5-s2", 7)  # the 42-CA fabric's one unused global port (test_faultspec)


def _clean(sm, cas: int):
    fabric = sm.load_dumps()
    report = verify_fabric(fabric)
    assert report.ok and report.cdg_acyclic, report.defects()
    assert report.pairs == report.delivered == cas * (cas - 1)
    return fabric


def sweep_mark_after(sm, sweep: Resweep) -> SweepMark:
    return SweepMark(Path(sm.log), sweep.end_offset)


def _lfts(fabric) -> dict[str, list[int]]:
    return {n.desc: list(n.lft) for n in fabric.switches()}


@pytest.fixture
def df42(ibsim_fabric, tmp_path):
    topo = dragonfly(*DRAGONFLY_SIZES[42])
    with ibsim_fabric(topo.write_net(tmp_path / "df42.net"), console=True) as h:
        sm = start_dla(h, engine=DLA_CHAIN, conf={"sweep_interval": 1, **fallback_options(8)})
        yield h, sm, len(topo.cas), _clean(sm, len(topo.cas))


def test_a_link_that_flaps_within_a_sweep_comes_back_to_the_pristine_routes(df42):
    h, sm, cas, pristine = df42
    node = ibsim_node_id(h.netfile, "sw-g0-s1")
    for _ in range(FLAPS - 1):
        h.command(f'Unlink "{node}"[6]')
        h.command(f'ReLink "{node}"[6]')
    h.command(f'Unlink "{node}"[6]')
    mark = sweep_mark(sm.log)
    h.command(f'ReLink "{node}"[6]')
    sweep = wait_resweep(sm, mark, timeout=120)
    # the flaps' traps can start the next heavy sweep at once, and it rewrites the dumps while
    # they are read (a loaded machine once read 72 unreachable pairs): the routes must come
    # back to pristine within a few sweeps, each judged whole
    for _ in range(4):
        assert sweep.engine == "dla", sweep.refusals
        if _lfts(sm.load_dumps()) == _lfts(pristine):
            break
        sweep = wait_resweep(sm, sweep_mark_after(sm, sweep), timeout=120)
    assert _lfts(_clean(sm, cas)) == _lfts(pristine)


def test_a_ca_recabled_to_another_switch_is_routed_there(df42):
    h, sm, cas, pristine = df42
    ca, (switch, port) = "ca-g3-s0-h0", SPARE
    lid = next(p.lid for n in pristine.cas() if n.desc == ca for p in n.ports.values())
    h.command(f'Unlink "{ibsim_node_id(h.netfile, ca)}"[1]')
    mark = sweep_mark(sm.log)
    h.command(f'Link "{ibsim_node_id(h.netfile, ca)}"[1] "{ibsim_node_id(h.netfile, switch)}"[{port}]')
    sweep = wait_resweep(sm, mark, timeout=120)
    # the Unlink's trap can start a heavy sweep that discovers the fabric before the Link and
    # ends after the mark (a loaded machine read 41 CAs, 1640 pairs): the CA must be routed at
    # its new switch within a few sweeps, each judged whole
    for _ in range(4):
        assert sweep.engine == "dla", sweep.refusals
        if any(n.desc == ca for n in sm.load_dumps().cas()):
            break
        sweep = wait_resweep(sm, sweep_mark_after(sm, sweep), timeout=120)
    fabric = _clean(sm, cas)
    node = next(n for n in fabric.cas() if n.desc == ca)
    assert node.ports[1].lid == lid and node.ports[1].remote is not None
    assert fabric.nodes[node.ports[1].remote[0]].desc == switch
