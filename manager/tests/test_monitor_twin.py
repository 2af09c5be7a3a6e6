"""Issue 23 item 3: the digital twin. The packet simulator runs the applied plan's classes,
saturating, on the fabric OpenSM and dla programmed in ibsim (read back); its per-port per-SL
bytes and per-VL wait are loaded into the patched ibsim (ibqos_sim.twin), and `ibqos monitor
--once --json` reads them through the real MAD path. On every link the simulator saw
congested (a VL waiting at a switch output), the monitor's class shares equal the
simulator's within 0.1 pp; a class squeezed by hand on one such link is the violation found.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from apply_helpers import child_env, sm_on_plan_a
from ibqos_sim import twin
from ibqos_sim.harness.ibsim_binary import patched_skip_reason
from ibqos_sim.sim import SimParams, Simulation, TrafficSpec, classes_from_plan, compile_network
from ibqos_sim.sim.port_counters import port_counts

pytestmark = pytest.mark.fabric
SKIP = patched_skip_reason()
REPLAY_S = 8.0  # the simulated window stands for this long on ibsim's links
BASE = 2**32 - 50_000  # PortXmitDataSL before the interval: the interval wraps it


def class_shares(plan, sl_bytes) -> dict[str, float]:
    total = sum(sl_bytes)
    return {
        c.name: 100 * sum(b for sl, b in enumerate(sl_bytes) if plan.sl2class[sl] == c.index) / total
        for c in plan.classes
    }


@pytest.mark.skipif(SKIP is not None, reason=SKIP or "")
def test_monitor_shares_equal_the_simulators_on_congested_links_and_the_planted_violation_is_found(ibqos_cli, tmp_path):
    with sm_on_plan_a(tmp_path, ibsim="patched", console=True) as (h, sm, plan, plan_path):
        fabric = h.read_back(save=False)
        params = SimParams(rate=plan.fabric.rate, mtu=plan.fabric.mtu, time_us=1000, warmup_us=100)
        traffic = TrafficSpec(pattern="uniform", msg_bytes=plan.fabric.mtu, classes=classes_from_plan(plan))
        with Simulation(compile_network(fabric, rate_gbps=params.rate_gbps), traffic, params, 1.0) as sim:
            sim.run()
            counts = port_counts(sim)
        vls = {c.name: set(c.vls) for c in plan.classes}
        congested = {
            key: pc
            for key, pc in counts.ports.items()
            if fabric.nodes[pc.guid].kind == "switch" and any(pc.vl_wait_ps) and sum(pc.sl_bytes)
        }
        assert congested, "the saturating run congests no switch output"
        names = {g: n.desc for g, n in fabric.nodes.items()}
        scale = twin.scale_for(counts, REPLAY_S)
        # the squeezed class: on the busiest congested output, the class that waited most
        # keeps a tenth of its bytes
        key, pc = max(congested.items(), key=lambda kv: sum(kv[1].sl_bytes))
        waited = max(plan.classes, key=lambda c: sum(pc.vl_wait_ps[v] for v in vls[c.name]))
        planted = tuple(b // 10 if plan.sl2class[sl] == waited.index else b for sl, b in enumerate(pc.sl_bytes))

        def load(name, lines):
            f = tmp_path / f"{name}.cmds"
            f.write_text("\n".join(lines) + "\n")
            h.command(f"!{f}", timeout=120)

        load("base", twin.baseline(counts, names, BASE))
        state = tmp_path / "state.json"
        monitor = [*ibqos_cli.argv, "monitor", "--plan", str(plan_path), "--sim-socket", h.sock, "--state", str(state)]
        # the replay's words stand for REPLAY_S: a link is judged while the real interval stays
        # under REPLAY_S / saturation (80 s), however slow a loaded machine makes the loads
        monitor += ["--once", "--json", "--saturation", "0.1"]
        first = subprocess.run(
            monitor + ["--interval", "0.2"], capture_output=True, text=True, timeout=120, env=child_env()
        )
        assert first.returncode in (0, 1), first.stderr
        t0 = json.loads(state.read_text())["time"]
        time.sleep(max(0.0, t0 + REPLAY_S - time.time()))
        load("after", twin.commands(counts, names, scale, BASE, {key: planted}))
        cp = subprocess.run(monitor, capture_output=True, text=True, timeout=120, env=child_env())
        assert sm.alive()
    assert cp.returncode == 1, cp.stdout + cp.stderr
    doc = json.loads(cp.stdout)
    links = {(ln["guid"], ln["port"]): ln for ln in doc["links"]}
    for (guid, port), pcount in congested.items():
        link = links[(f"0x{guid:016x}", port)]
        assert link["source"] == "xmit"
        sim = class_shares(plan, planted if (guid, port) == key else pcount.sl_bytes)
        got = {c["class"]: c["share_pct"] for c in link["classes"]}
        for name, share in sim.items():
            assert got[name] == pytest.approx(share, abs=0.1), (link["node"], port, name)
    violations = {(f["node"], f["port"], f["class"]) for f in doc["findings"] if f["kind"] == "sla-violation"}
    assert (names[key[0]], key[1], waited.name) in violations, doc["findings"]
