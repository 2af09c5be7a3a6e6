"""Simulator behaviour on Python-built fabrics: conservation, determinism, deadlock and its
witness, VOQ, traffic patterns, errors."""

from __future__ import annotations

import json

import pytest
from ibqos.arbiter import ArbTable
from ibqos.errors import InputError
from ibqos_sim.sim import SimParams, Simulation, TrafficClass, TrafficSpec, compile_network, simulate
from ibqos_sim.sim.traffic import _stencil_neighbours, build_flows
from simfabrics import config_a, dragonfly_dla, star

QUICK = dict(warmup_us=20, time_us=150)


@pytest.fixture(scope="module")
def df2():
    return compile_network(dragonfly_dla(vls=2), rate_gbps=32)


@pytest.fixture(scope="module")
def df1():
    return compile_network(dragonfly_dla(vls=1), rate_gbps=32)


def _stable(res) -> str:
    d = res.to_json()
    d["counters"] = {k: v for k, v in d["counters"].items() if k not in ("wall_s", "cpu_s", "hops_per_cpu_s")}
    return json.dumps(d, sort_keys=True)


@pytest.mark.parametrize(
    "voq, input_reads, voq_buffers, buffer",
    [
        (True, "N", "shared", 2),
        (False, "N", "shared", 2),
        (True, 1, "shared", 2),
        (False, 1, "shared", 2),
        (True, "N", "per-output", 2),
        (True, 1, "per-output", 1),
    ],
)
def test_conservation_and_credits_hold_at_every_step(df2, voq, input_reads, voq_buffers, buffer):
    """Injected = delivered + in flight + dropped, and every (port, VL) buffer's credits add up
    (sender credits + credits on the way back + occupancy = buffer size; with per-output VOQ
    buffers every (port, VL, next output) queue's), checked mid-run; a switch input never
    feeds more outputs at once than input_reads allows."""
    params = SimParams(**QUICK, buffer_packets=buffer, voq=voq, input_reads=input_reads, voq_buffers=voq_buffers)
    with Simulation(df2, TrafficSpec(pattern="uniform", msg_bytes=10000), params, 0.9, audit=True) as sim:
        for k in range(1, 9):
            sim.run(sim.end_ps * k // 8)
            r, a = sim.raw, sim.audit()
            assert r.injected == r.delivered + r.in_flight + r.dropped_route + r.dropped_vl
            assert r.dropped_route == r.dropped_vl == 0
            assert a.queue_errors == 0 and a.credit_errors == 0 and a.read_errors == 0
            assert a.queued + a.on_link == r.in_flight
            assert r.in_flight > 0 and r.delivered > 0


def test_fixed_seed_is_reproducible_and_two_sims_share_a_process(df2):
    params = SimParams(**QUICK, seed=5)
    traffic = TrafficSpec(pattern="uniform")
    a = Simulation(df2, traffic, params, 0.7)
    b = Simulation(df2, traffic, params, 0.7)
    for k in range(1, 5):  # interleaved: no shared state
        a.run(a.end_ps * k // 4)
        b.run(b.end_ps * (5 - k) // 4 if k < 4 else b.end_ps)
    b.run()
    assert _stable(a.result()) == _stable(b.result())
    other = simulate(df2, traffic, params.model_copy(update={"seed": 6}), 0.7)
    assert _stable(other) != _stable(a.result())
    for q in ("heap", "list"):  # every event queue gives the same run
        assert _stable(simulate(df2, traffic, params.model_copy(update={"evq": q}), 0.7)) == _stable(
            a.result()
        ).replace('"evq": "calendar"', f'"evq": "{q}"')
    a.close()
    b.close()


def test_one_vl_dragonfly_deadlocks_with_a_connected_witness(df1):
    res = simulate(df1, TrafficSpec(), SimParams(buffer_packets=1, **QUICK), 1.0)
    assert res.status == "deadlock"
    cyc = res.deadlock["cycle"]
    assert len(cyc) >= 3
    # each channel feeds the switch whose output is the next channel: a closed walk
    fab = df1.fabric
    by_desc = {n.desc: n for n in fab.nodes.values()}
    for here, nxt in zip(cyc, cyc[1:] + cyc[:1], strict=True):
        sw, rest = here.rsplit(":", 1)
        port, vl = map(int, rest.split("/"))
        peer_guid, _ = by_desc[sw].ports[port].remote
        assert fab.nodes[peer_guid].desc == nxt.rsplit(":", 1)[0]
        assert vl == 0
    assert res.counters["injected"] == res.counters["delivered"] + res.counters["in_flight"]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fig8_vls_do_not_deadlock_at_full_load(df2, seed):
    res = simulate(df2, TrafficSpec(), SimParams(buffer_packets=1, seed=seed, **QUICK), 1.0)
    assert res.status == "done" and res.deadlock is None
    assert res.accepted_pct > 30


def test_voq_beats_fifo_input_queues_at_full_load(df2):
    p = SimParams(**QUICK)
    voq = simulate(df2, TrafficSpec(), p, 1.0)
    fifo = simulate(df2, TrafficSpec(), p.model_copy(update={"voq": False}), 1.0)
    assert voq.accepted_pct > fifo.accepted_pct + 5


def test_one_read_per_input_costs_fifo_switches_more_than_voq_ones(df2):
    """An input read at link rate (input_reads 1) cannot drain a backlog to two outputs at
    once: that costs head-of-line-blocked FIFO inputs more than VOQ inputs, so VOQ's gain
    grows (docs/simulator.md, "Switch model")."""
    acc = {}
    for voq in (False, True):
        for reads in ("N", 1):
            p = SimParams(warmup_us=50, time_us=300, voq=voq, input_reads=reads)
            acc[voq, reads] = simulate(df2, TrafficSpec(), p, 1.0).accepted_pct
    assert acc[False, 1] < acc[False, "N"] - 5
    assert acc[True, 1] <= acc[True, "N"] + 0.5
    assert acc[True, 1] / acc[False, 1] > acc[True, "N"] / acc[False, "N"] + 0.05


# Measured with the core before voq_buffers existed (main at 809ce35), seed 3, load 0.9:
# (packet-hops, events, delivered packets) per (voq, input reads, buffer packets).
BEFORE_VOQ_BUFFERS = {
    (True, "N", 1): (23480, 68144, 5343),
    (True, 1, 4): (40388, 97955, 8972),
    (False, 1, 4): (32012, 81268, 7147),
}


@pytest.mark.parametrize("voq, reads, buffer", list(BEFORE_VOQ_BUFFERS))
def test_shared_voq_buffers_run_exactly_as_before(df2, voq, reads, buffer):
    """Shared VOQ buffers (the default) are the switch of the core before the parameter,
    event for event; without VOQ, per-output buffers change nothing either."""
    p = SimParams(warmup_us=20, time_us=150, buffer_packets=buffer, voq=voq, input_reads=reads, seed=3)
    for vb in ("shared",) if voq else ("shared", "per-output"):
        c = simulate(df2, TrafficSpec(), p.model_copy(update={"voq_buffers": vb}), 0.9).counters
        assert (c["packet_hops"], c["events"], c["delivered"]) == BEFORE_VOQ_BUFFERS[voq, reads, buffer], vb


def test_per_output_voq_buffers_gain_even_with_one_packet_buffers(df2):
    """Seed 003's finding at 1 packet per VL: VOQs that share the VL's buffer have nothing to
    reorder (factor 1.00), VOQs with a buffer each let packets to free outputs pass (1.40
    measured with input reads 1, 500 µs warm-up and 2 ms; docs/simulator.md)."""
    acc = {}
    for voq, vb in ((False, "shared"), (True, "shared"), (True, "per-output")):
        p = SimParams(warmup_us=50, time_us=400, buffer_packets=1, voq=voq, voq_buffers=vb, input_reads=1)
        res = simulate(df2, TrafficSpec(), p, 1.0)
        assert res.status == "done"
        acc[voq, vb] = res.accepted_pct
    assert acc[True, "shared"] == acc[False, "shared"]
    assert acc[True, "per-output"] / acc[False, "shared"] > 1.25


def test_per_output_voq_buffers_hide_the_credit_loop_of_one_vl(df1):
    """Why per-output buffers are not the default: with every route's next queue its own
    (switch, input, output) resource, minimal dragonfly routes on one VL no longer wait in a
    cycle, so the credit loop an IB fabric deadlocks on (shared buffers, per-VL credits)
    does not show (docs/simulator.md, "Switch model")."""
    p = SimParams(buffer_packets=1, **QUICK)
    assert simulate(df1, TrafficSpec(), p, 1.0).status == "deadlock"
    assert simulate(df1, TrafficSpec(), p.model_copy(update={"voq_buffers": "per-output"}), 1.0).status == "done"


def test_low_load_is_accepted_in_full(df2):
    res = simulate(df2, TrafficSpec(process="cbr"), SimParams(**QUICK), 0.3)
    assert res.accepted_pct == pytest.approx(30, abs=1.5)
    assert res.offered_pct == pytest.approx(30, abs=1e-6)
    assert res.per_class[0].net_latency.p50_us < res.per_class[0].net_latency.p99_us


def test_patterns_pick_the_documented_destinations(df2):
    rate, mtu = 32.0, 4096
    hot = build_flows(df2, TrafficSpec(pattern="hotspot"), 0.5, rate, mtu)
    n = df2.n_endpoints  # 72: 4 hot sources, 2 hot destinations
    assert len(hot.info["hotspot"]["sources"]) == 4 and len(hot.info["hotspot"]["destinations"]) == 2
    assert len(hot.measured) == n - 2
    nb = _stencil_neighbours(n)
    assert all(len(x) == 6 and i not in x for i, x in enumerate(nb))
    assert all(i in nb[j] for i, x in enumerate(nb) for j in x)  # symmetric
    adv = build_flows(df2, TrafficSpec(pattern="adversarial"), 0.5, rate, mtu)
    assert adv.info["groups"] == 9
    sw_of = [df2.ep_switch(e) for e in range(n)]
    group = {g: int(df2.fabric.nodes[g].desc.split("-")[1][1:]) for g in set(sw_of)}
    for f in adv.flows[: adv.n_flows]:
        dests = adv.dests[f.dest_off : f.dest_off + f.dest_len]
        assert {(group[sw_of[d]] - group[sw_of[f.src]]) % 9 for d in dests} == {1}


def test_hotspot_throughput_is_measured_on_non_hot_destinations(df2):
    res = simulate(df2, TrafficSpec(pattern="hotspot"), SimParams(**QUICK), 0.3)
    assert res.status == "done"
    assert 20 < res.accepted_pct < 40  # the uniform part, not the hot CAs


def test_qos_mix_reports_every_class():
    f = star(4, config_a())
    classes = [TrafficClass(name=f"c{s}", sl=s, msg_bytes=4096, pattern="uniform") for s in range(4)]
    res = simulate(f, TrafficSpec(classes=classes), SimParams(rate="EDR", **QUICK), 1.0)
    assert [c.name for c in res.per_class] == ["c0", "c1", "c2", "c3"]
    # Every class saturates every CA link, so each output's config A tables split it as
    # seed 002 measured on hardware (45.7 / 27.4 / 18.4 / 8.6 %); 150 µs resolves 0.7 pp.
    got = [c.share_pct for c in res.per_class]
    assert got == pytest.approx([45.7, 27.4, 18.4, 8.6], abs=0.7)
    assert set(res.per_vl) == {0, 1, 2, 3}


def test_bad_input_is_one_input_error():
    f = star(2, None, vls=2)  # 2 VLs and no VLArb anywhere
    with pytest.raises(InputError, match=r"vlarb: .*missing for a port with 2 operational VLs"):
        compile_network(f, rate_gbps=32, source="run/fabric.json")
    net = compile_network(star(2, config_a()), rate_gbps=32)
    with pytest.raises(InputError, match="load"):
        simulate(net, TrafficSpec(), SimParams(), 1.5)
    f = star(2, config_a())
    del f.nodes[0x100].sl2vl[(1, 2)]
    with pytest.raises(InputError, match=r"sl2vl: .*missing"):
        compile_network(f, rate_gbps=32)
    f = star(2, config_a())
    f.nodes[0x100].ports[2].vlarb = ArbTable([(0, 0)], [(1, 0)], 1, 8, 8)
    with pytest.raises(InputError, match="weight 0"):
        compile_network(f, rate_gbps=32)
    with pytest.raises(InputError, match="hot-spot"):
        simulate(net, TrafficSpec(pattern="hotspot"), SimParams(**QUICK), 0.5)


def test_unrouted_destinations_are_counted_not_lost():
    f = star(3, config_a())
    f.nodes[0x100].lft[4] = 255  # ca2 unreachable
    res = simulate(f, TrafficSpec(), SimParams(rate="EDR", **QUICK), 0.5)
    c = res.counters
    assert c["dropped_unrouted"] > 0
    assert c["injected"] == c["delivered"] + c["in_flight"] + c["dropped_unrouted"]
    assert any("unrouted" in n for n in res.notes)
    # Uniform over 3 CAs: ca0 and ca1 send half their packets to ca2, so a third of all
    # injected packets has no route (±0.08 is about 5 standard deviations at ~800 packets).
    assert c["injected"] > 500
    assert c["dropped_unrouted"] / c["injected"] == pytest.approx(1 / 3, abs=0.08)


def test_per_output_buffers_return_the_credits_of_dropped_packets():
    """A packet the next switch drops (no route) was sent on the credits of queue 0 of its
    VL (no output: the sender reads the receiver's LFT); the drop returns them there, so
    every queue's credits still add up."""
    f = star(3, config_a())
    f.nodes[0x100].lft[4] = 255  # ca2 unreachable
    params = SimParams(rate="EDR", buffer_packets=1, voq_buffers="per-output", **QUICK)
    net = compile_network(f, rate_gbps=params.rate_gbps)
    with Simulation(net, TrafficSpec(), params, 0.9, audit=True) as sim:
        for k in range(1, 5):
            sim.run(sim.end_ps * k // 4)
            r, a = sim.raw, sim.audit()
            assert a.credit_errors == 0 and a.queue_errors == 0
            assert r.injected == r.delivered + r.in_flight + r.dropped_route
        assert r.dropped_route > 100 and r.delivered > 100


def test_each_pair_travels_on_the_sl_the_sa_gave_it():
    """Per-pair SLs (lash, dfsssp): a packet takes its (source, destination) pair's SL, so the
    delivered traffic per SL follows how many pairs each SL carries (at a load nothing
    saturates), not the flow's own SL 0."""
    f = star(4, config_a())
    lids = [f.nodes[g].ports[1].lid for g in sorted(f.nodes) if f.nodes[g].kind == "ca"]
    f.path_sls = {(s, d): (i + j) % 4 for i, s in enumerate(lids) for j, d in enumerate(lids) if i != j}
    res = simulate(f, TrafficSpec(), SimParams(rate="EDR", warmup_us=20, time_us=1500), 0.3)
    assert res.status == "done"
    pairs = [0] * 4
    for sl in f.path_sls.values():
        pairs[sl] += 1
    got = {r.sl: r.packets for r in res.per_sl}
    total = sum(got.values())
    for sl in range(4):
        assert got.get(sl, 0) / total == pytest.approx(pairs[sl] / sum(pairs), abs=0.04), (sl, got)
    # a pair SL on a VL the CA port does not run (SL 9 -> VL 9, 4 VLs) is refused before the run
    g = star(4, config_a(), sl2vl=tuple(range(16)))
    g.path_sls = dict(f.path_sls)
    g.path_sls[(lids[0], lids[1])] = 9
    with pytest.raises(InputError, match="SL 9 maps to VL 9"):
        simulate(g, TrafficSpec(), SimParams(rate="EDR", warmup_us=20, time_us=50), 0.3)


def test_twonode_names_a_port_by_description_or_node_guid():
    """Sources and destination by name or by node GUID (any case); an unknown name is one
    InputError naming the field."""
    net = compile_network(star(4, config_a()), rate_gbps=100, source="star")
    spec = TrafficSpec(pattern="twonode", src="ca0,0x0000000000000201", dst="CA3".lower())
    fs = build_flows(net, spec, 1.0, 100, 4096)
    assert fs.info["twonode"] == {"src": ["ca0", "ca1"], "dst": "ca3"}
    spec = TrafficSpec(pattern="twonode", src="0x0000000000000202", dst="0X0000000000000203")
    assert build_flows(net, spec, 1.0, 100, 4096).info["twonode"] == {"src": ["ca2"], "dst": "ca3"}
    with pytest.raises(InputError, match="no CA port named 'ca9'") as e:
        build_flows(net, TrafficSpec(pattern="twonode", src="ca9", dst="ca0"), 1.0, 100, 4096)
    assert e.value.field == "src"


def test_adversarial_traffic_needs_two_dragonfly_groups():
    """One switch is one group, whose next group is itself: the pattern ran as every CA to
    every CA, itself included, under the adversarial name."""
    net = compile_network(star(4, config_a()), rate_gbps=32)
    with pytest.raises(InputError) as e:
        build_flows(net, TrafficSpec(pattern="adversarial"), 0.5, 32.0, 4096)
    assert str(e.value) == (
        "fabric: traffic: adversarial traffic sends every CA to the CAs of the next dragonfly group, and this "
        "fabric is a single group (1 switch), whose next group is itself: that is uniform traffic; use uniform"
    )
