"""The simulator on fabrics programmed by real OpenSM (and the dla plugin) on ibsim, read back:
the issue's validation tests 2-4 on the 72-CA dragonfly of seed 003 §5.1."""

from __future__ import annotations

import pytest
from ibqos import paths
from ibqos.fabric.dumps import load_dumps
from ibqos.plan import load_plan
from ibqos.verify import verify_fabric
from ibqos_sim.harness import Harness
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly
from ibqos_sim.sim import SimParams, TrafficClass, TrafficSpec, compile_network, simulate
from ibqos_sim.sim.traffic import classes_from_plan

pytestmark = pytest.mark.fabric

DLA = "dla,minhop"
SHORT = dict(warmup_us=20, time_us=150)


@pytest.fixture(scope="module")
def df72(ibqos_cli, tmp_path_factory):
    """minhop dumps, dla read live, and dla with the four-class plan read live; every process
    is stopped before the tests run."""
    lib = paths.plugin_dir() / "libibqos.so"
    if not lib.exists():
        pytest.fail(f"{lib} is missing: run 'make build'")
    d = tmp_path_factory.mktemp("df72")
    plan_path = d / "plan.json"
    for cmd in (
        ["plan", paths.REPO_ROOT / "examples" / "four-class.yaml", "-o", plan_path],
        ["render", plan_path, "-o", d / "render"],
    ):
        cp = ibqos_cli(*cmd, timeout=300)
        assert cp.returncode == 0, cp.stderr
    net = dragonfly(*DRAGONFLY_SIZES[72]).write_net(d / "fabric.net")
    with Harness(net, run_dir=d / "run") as h:
        minhop = load_dumps(h.run_sm(engine="minhop", name="minhop").dumps, require_sl2vl=False)
        h.run_sm(engine=DLA, plugin=True, conf={"qos": "TRUE"}, name="dla")
        dla = h.read_back(save=False)
        h.run_sm(
            engine=DLA,
            plugin=True,
            conf={"qos": "TRUE"},
            plugin_options=d / "render" / "plugin-tables.conf",
            name="qos",
        )
        qos = h.read_back(save=False)
    return {"minhop": minhop, "dla": dla, "qos": qos, "plan": load_plan(plan_path)}


def test_minhop_deadlocks_and_the_witness_is_a_credit_loop(df72):
    """Validation 2a: minhop, 1 VL, uniform at load 1.0, 1-packet buffers."""
    res = simulate(df72["minhop"], TrafficSpec(), SimParams(buffer_packets=1, **SHORT), 1.0)
    assert res.status == "deadlock"
    cycle = res.deadlock["cycle"]
    assert len(cycle) >= 3 and all(c.startswith("sw-") and c.endswith("/0") for c in cycle)
    # every channel of the witness continues into the next one through a switch, in the
    # verifier's format; and the verifier, reading the same model, finds a credit loop too
    fab = df72["minhop"]
    by_desc = {n.desc: n for n in fab.nodes.values()}
    for here, nxt in zip(cycle, cycle[1:] + cycle[:1], strict=True):
        sw, port = here.rsplit(":", 1)[0], int(here.rsplit(":", 1)[1].split("/")[0])
        assert fab.nodes[by_desc[sw].ports[port].remote[0]].desc == nxt.rsplit(":", 1)[0]
    assert not verify_fabric(fab).cdg_acyclic


@pytest.mark.parametrize("load", [0.5, 1.0])
def test_dla_never_deadlocks_in_20_seeds(df72, load):
    """Validation 2b: the same traffic on dla's routes and Fig. 8 VLs."""
    net = compile_network(df72["dla"], rate_gbps=32)
    assert set(net.arrays["sl2vl_rows"][0::16]) == {0, 1}  # SL 0 on VL0, VL1 after a global hop
    for seed in range(1, 21):
        res = simulate(net, TrafficSpec(), SimParams(buffer_packets=1, seed=seed, **SHORT), load)
        assert res.status == "done", (seed, res.deadlock)
        assert res.counters["delivered"] > 0


def test_dla_accepts_more_with_voq(df72):
    """Validation 3 (seed 003 §5.1): load 1.0, 16-packet buffers."""
    net = compile_network(df72["dla"], rate_gbps=32)
    p = SimParams(warmup_us=50, time_us=300)
    voq = simulate(net, TrafficSpec(), p, 1.0)
    fifo = simulate(net, TrafficSpec(), p.model_copy(update={"voq": False}), 1.0)
    assert voq.status == fifo.status == "done"
    assert voq.accepted_pct > fifo.accepted_pct + 3


def test_four_class_plan_shares_and_priorities(df72):
    """Validation 4: three CAs of group 0 saturate every class towards a fourth, so the switch
    port facing it (role terminal) is the contended link: each class gets its planned share
    within 2 pp. With the high-priority classes inside their share and the low ones saturating,
    the high-priority classes see the lower latency."""
    plan = df72["plan"]
    net = compile_network(df72["qos"], rate_gbps=plan.fabric.rate_gbps)
    srcs = "ca-g0-s1-h0,ca-g0-s2-h0,ca-g0-s3-h0"
    p = SimParams(rate=plan.fabric.rate_gbps, accounting=plan.accounting, warmup_us=50, time_us=500)
    sat = classes_from_plan(plan, pattern="twonode")
    res = simulate(net, TrafficSpec(classes=sat, src=srcs, dst="ca-g0-s0-h0"), p)
    assert res.status == "done" and res.accepted_pct > 99
    planned = plan.analysis["terminal"]["per_class"]
    for c in res.per_class:
        assert c.share_pct == pytest.approx(planned[c.name]["share"], abs=2.0), c

    # high-priority classes at 80% of their planned share, low ones saturating
    mixed = [
        TrafficClass(
            name=c.name,
            sl=c.sl,
            pattern="twonode",
            rate=round(0.8 * planned[c.name]["share"] / 100 / 3, 4) if c.priority == 0 else "saturate",
            priority=c.priority,
        )
        for c in sat
    ]
    res = simulate(net, TrafficSpec(classes=mixed, src=srcs, dst="ca-g0-s0-h0"), p)
    lat = {c.name: c.net_latency.mean_us for c in res.per_class}
    high = [c.name for c in mixed if c.priority == 0]
    low = [c.name for c in mixed if c.priority == 1]
    assert max(lat[n] for n in high) < min(lat[n] for n in low), lat
