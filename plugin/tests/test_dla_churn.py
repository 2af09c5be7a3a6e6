"""No collateral re-routing (issue 25): a switch failing under a running OpenSM changes only
the LFT entries whose pristine route crossed it, and its repair restores the pristine LFTs.

On the 42-CA dragonfly (a=3, h=3, 7 groups) several group pairs have two global links, so
which of them a route takes is dla's choice per destination; a failure elsewhere in the
destination's group must not move it."""

from __future__ import annotations

import pytest
from dla_testlib import start_dla
from ibqos.fabric.churn import crossed_entries, lft_changes
from ibqos_sim.campaign import single_faults
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly

pytestmark = pytest.mark.fabric


def test_a_switch_fault_moves_only_the_routes_that_crossed_it(ibsim_fabric, tmp_path):
    topo = dragonfly(*DRAGONFLY_SIZES[42])
    faults = [f for f in single_faults(topo)[0] if f.short_kind == "switch"]
    net = topo.write_net(tmp_path / "fabric.net")
    collateral, unrestored = {}, []
    with ibsim_fabric(net, console=True) as h:
        sm = start_dla(h, conf={"sweep_interval": 1})
        pristine = sm.load_dumps(require_sl2vl=False)
        for f in faults:
            crossed, _ = crossed_entries(pristine, f)
            sweep = h.switch_down(f.node, sm=sm, timeout=120)
            assert sweep is not None and sweep.engine == "dla", f"{f}: dla did not route the re-sweep"
            changed, _ = lft_changes(pristine, sm.load_dumps(require_sl2vl=False))
            if changed - crossed:
                collateral[f.node] = sorted(changed - crossed)
            h.switch_up(f.node, sm=sm, timeout=120)
            if lft_changes(pristine, sm.load_dumps(require_sl2vl=False))[0]:
                unrestored.append(f.node)
    assert len(faults) == 20
    assert not collateral, "entries changed whose route did not cross the failed switch: " + "; ".join(
        f"{node}: {len(e)} ({', '.join(f'{g:#x}/{lid}' for g, lid in e[:4])})" for node, e in collateral.items()
    )
    assert not unrestored, f"the repair did not restore the pristine LFTs after: {unrestored}"
