"""dla on healthy dragonflies: real OpenSM + libibqos on ibsim, checked from the dumps by the
verifier and ibdmchk, and SL2VL read back live with smpquery on every switch port pair."""

from __future__ import annotations

import re

import pytest
from dla_testlib import fig8_vl, name_groups, port_kind, run_dla, start_dla
from ibqos.fabric.dumps import load_dumps
from ibqos.verify import iter_routes, verify_fabric
from ibqos.verify.ibdmchk import run_ibdmchk
from ibqos_sim.harness.diags import smpquery_sl2vl
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly

pytestmark = pytest.mark.fabric

LINK_LINE = re.compile(r"dla: global link .* \(group (\d+) -> (\d+)\): (\d+) routes, (\d+) LIDs")


@pytest.mark.parametrize("size", [42, 72])
def test_dla_routes_dragonfly_deadlock_free(tmp_path, size, ibsim_fabric):
    topo = dragonfly(*DRAGONFLY_SIZES[size])
    net = topo.write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        run = run_dla(h)
        fabric = load_dumps(run.dumps)
        groups = name_groups(fabric)
        # SL2VL as the switches hold it, every (in, out) pair, against Fig. 8
        mismatches = []
        for sw in fabric.switches():
            for out in range(1, sw.nports + 1):
                if port_kind(fabric, groups, sw.guid, out) == "none":
                    continue
                for inp, vls in smpquery_sl2vl(h, sw.lid, out).items():
                    want = fig8_vl(0, port_kind(fabric, groups, sw.guid, inp), port_kind(fabric, groups, sw.guid, out))
                    if vls != (want,) * 16:
                        mismatches.append((sw.desc, inp, out, vls))
        assert not mismatches, mismatches[:5]

    lines = run.lines()
    assert run.configured_engines() == ["dla"]
    assert run.engine_seconds() is not None

    report = verify_fabric(fabric)
    assert report.ok, report.defects()
    assert report.pairs == size * (size - 1)
    assert report.delivered == report.pairs
    assert max(report.hops) <= 3 and report.vls_used == [0, 1] and report.sls_used == [0]
    assert report.cdg_acyclic

    # at most one global hop and at most one local hop after it, by the generator's groups
    for route in iter_routes(fabric):
        kinds = [port_kind(fabric, groups, g, out) for g, _, out, _ in route.hops]
        switch_hops = [k for k in kinds if k in ("local", "global")]
        assert switch_hops.count("global") <= 1, (route, kinds)
        assert len(switch_hops) <= 3
        if "global" in switch_hops:
            assert switch_hops.index("global") <= 1, kinds
            assert len(switch_hops) - switch_hops.index("global") - 1 <= 1, kinds
        else:
            assert len(switch_hops) <= 1, kinds

    # per-link route counts in the log, spread evenly over a pair's links
    per_pair: dict[tuple[int, int], list[int]] = {}
    for ln in lines:
        m = LINK_LINE.search(ln.text)
        if m:
            per_pair.setdefault((int(m.group(1)), int(m.group(2))), []).append(int(m.group(3)))
    g = topo.params["g"]
    assert len(per_pair) == g * (g - 1)
    assert all(min(c) > 0 for c in per_pair.values())
    a, p = topo.params["a"], topo.params["p"]
    for counts in per_pair.values():
        # one destination LID's routes from every switch of the group at most apart
        assert max(counts) - min(counts) <= a * (1 + p), counts

    # ibdmchk independently: no credit loops with the plugin's SL2VL, 2 VLs
    chk = run_ibdmchk(run.dumps, fabric, tmp_path / "ibdmchk")
    assert not chk.credit_loops, chk.output[-2000:]
    assert "-I- no credit loops found" in chk.output


def test_dla_keeps_requested_sl_in_path_records(tmp_path, ibsim_fabric):
    """path_sl returns the SL asked for: SA path records with SL 3 come back with SL 3."""
    net = dragonfly(*DRAGONFLY_SIZES[72]).write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        sm = start_dla(h)
        assert any("dla tables configured" in ln.text for ln in sm.lines())
        for sl in (0, 3):
            cp = h.diag(["saquery", "--sl", str(sl), "PR", "--slid", "1", "--dlid", "5"], check=False)
            assert re.search(rf"\bsl\.+0x{sl:x}\b", cp.stdout), cp.stdout + cp.stderr
