"""Issue 20 item 5: `ibqos status` tells the truth. Exit 0 only on the healthy fabric; exit 1
with one line per finding on an LFT routing loop, empty LFTs, dla refused with a fallback in
force, tables differing from the applied plan, a planned link down, an MTU below the plan's.

Real OpenSM with the dla plugin on ibsim; the LFT cases edit a real read-back (fabric.json)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from apply_helpers import child_env, make_plan_file, run_apply, switch_link
from ibqos.fabric.live import read_live
from ibqos.fabric.model import NO_ROUTE
from ibqos.osmconf import parse
from ibqos.render import render_plan
from ibqos_sim.harness import Harness
from ibqos_sim.harness.topology import dragonfly, fat_tree
from smp_edit import dr_paths, lft_entry, sl2vl

pytestmark = pytest.mark.fabric
CHAIN = "dla,dfsssp,lash,nue"  # what the plan renders (templates/opensm.conf.j2)


def status(ibqos_cli, *args, env=None) -> subprocess.CompletedProcess:
    return ibqos_cli("status", *args, env=env or child_env(), timeout=300)


def findings(ibqos_cli, *args, env=None) -> tuple[int, list[dict]]:
    cp = status(ibqos_cli, *args, "--json", env=env)
    assert cp.returncode in (0, 1), cp.stdout + cp.stderr
    doc = json.loads(cp.stdout)
    assert doc["ok"] == (cp.returncode == 0) == (doc["findings"] == [])
    return cp.returncode, doc["findings"]


def kinds(found: list[dict]) -> list[str]:
    return [f["kind"] for f in found]


# ---- a run directory: a real read-back, then edited ---------------------------------------


@pytest.fixture(scope="module")
def healthy_run(tmp_path_factory):
    """A 12-CA dragonfly routed by dla with plan A; run/ holds fabric.json, plan.json, sm0/."""
    tmp = tmp_path_factory.mktemp("status")
    plan, plan_path = make_plan_file(tmp, "a", 40)
    files = render_plan(plan, tmp / "cfg")
    net = dragonfly(3, 1, 1).write_net(tmp / "fabric.net")
    # Debian's ibsim explicitly: its links run MTU 2048, the plan's (the MTU test raises the plan's)
    with Harness(net, run_dir=tmp / "run", ibsim="debian") as h:
        h.run_sm(engine=CHAIN, plugin=True, conf_files=[files["opensm.conf"]])
        h.read_back()
    shutil.copy(plan_path, h.run_dir / "plan.json")
    return h.run_dir


def edited_copy(run: Path, dest: Path, edit) -> Path:
    """The run directory with its fabric.json (a real read-back) passed through `edit`."""
    shutil.copytree(run, dest, ignore=shutil.ignore_patterns("*.sock", "ibsim*"))
    doc = json.loads((dest / "fabric.json").read_text())
    edit(doc)
    (dest / "fabric.json").write_text(json.dumps(doc))
    return dest


def _nodes(doc):
    nodes = doc["nodes"]
    return nodes.values() if isinstance(nodes, dict) else nodes


def lft_loop(doc) -> None:
    """Route one CA's LID back and forth between its switch and a neighbour switch."""
    nodes = list(_nodes(doc))
    by_guid = {n["guid"]: n for n in nodes}
    ca = next(n for n in nodes if n["kind"] == "ca")
    cport = next(p for p in _ports(ca) if p.get("remote"))
    lid = cport["lid"]
    sw = by_guid[cport["remote"][0]]
    p, (peer_guid, q) = next(
        (p["num"], p["remote"]) for p in _ports(sw) if p.get("remote") and by_guid[p["remote"][0]]["kind"] == "switch"
    )
    sw["lft"][lid] = p
    by_guid[peer_guid]["lft"][lid] = q


def _ports(node):
    ports = node["ports"]
    return ports.values() if isinstance(ports, dict) else ports


def empty_lfts(doc) -> None:
    for n in _nodes(doc):
        if n["kind"] == "switch":
            n["lft"] = [NO_ROUTE] * len(n["lft"])


def test_healthy_run_exits_0(ibqos_cli, healthy_run):
    rc, found = findings(ibqos_cli, healthy_run)
    assert rc == 0 and found == []
    cp = status(ibqos_cli, healthy_run)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert "routing in force (dla): no credit loops" in cp.stdout
    assert "every CA pair reachable (132/132)" in cp.stdout and "every planned link up" in cp.stdout


def test_an_lft_routing_loop_exits_1_and_verify_never_says_acyclic(ibqos_cli, healthy_run, tmp_path):
    run = edited_copy(healthy_run, tmp_path / "loop", lft_loop)
    rc, found = findings(ibqos_cli, run)
    assert rc == 1 and "routing-loop" in kinds(found), found
    loop = next(f for f in found if f["kind"] == "routing-loop")
    assert loop["pairs"] > 0 and " -> " in loop["message"]
    cp = status(ibqos_cli, run)
    assert cp.returncode == 1 and "pairs in routing loops" in cp.stdout
    assert "no credit loops" not in cp.stdout
    v = ibqos_cli("verify", run / "fabric.json", timeout=300)
    assert v.returncode == 1, v.stdout + v.stderr
    assert "pairs in routing loops" in v.stdout
    assert "acyclic" not in v.stdout and "channel dependency graph" in v.stdout
    assert "not meaningful" in v.stdout
    vj = ibqos_cli("verify", run / "fabric.json", "--json", timeout=300)
    assert json.loads(vj.stdout)["cdg"] == "incomplete"


def test_empty_lfts_exit_1(ibqos_cli, healthy_run, tmp_path):
    run = edited_copy(healthy_run, tmp_path / "empty", empty_lfts)
    rc, found = findings(ibqos_cli, run)
    assert rc == 1 and "unreachable" in kinds(found), found
    assert next(f for f in found if f["kind"] == "unreachable")["pairs"] == 132


def test_an_mtu_below_the_plans_exits_1(ibqos_cli, healthy_run, tmp_path):
    """Debian's ibsim's ports run MTU 2048 (read back); the copy's plan says 4096."""
    run = edited_copy(healthy_run, tmp_path / "mtu", lambda doc: None)
    plan = json.loads((run / "plan.json").read_text())
    plan["fabric"]["mtu"] = 4096
    (run / "plan.json").write_text(json.dumps(plan))
    rc, found = findings(ibqos_cli, run)
    mtu = [f for f in found if f["kind"] == "mtu"]
    assert rc == 1 and mtu and all(f["mtu"] == 2048 and "below the plan's MTU 4096" in f["message"] for f in mtu), found


# ---- a live configuration under ibqos apply ------------------------------------------------


@pytest.fixture
def applied(ibqos_cli, tmp_path):
    """Plan A applied (ibqos.d/current) to a daemon OpenSM with the dla plugin; ibsim console on."""
    plan_a, path_a = make_plan_file(tmp_path, "a", 40)
    files = render_plan(plan_a, tmp_path / "cfg-a")
    net = dragonfly(3, 1, 1).write_net(tmp_path / "fabric.net")
    with Harness(net, run_dir=tmp_path / "run", console=True) as h:
        sm = h.start_sm(engine=CHAIN, plugin=True, conf_files=[files["opensm.conf"]])
        r = run_apply(ibqos_cli, h, sm, path_a)
        assert r.returncode == 0, r.stdout + r.stderr
        yield h, sm


def live_status(ibqos_cli, h, sm, *extra):
    return findings(ibqos_cli, "--live", "--opensm-conf", sm.conf, "--osm-log", sm.log, "--sim-socket", h.sock, *extra)


def test_applied_plan_is_the_default_then_link_down_and_tables_differ(ibqos_cli, applied, tmp_path):
    h, sm = applied
    state = sm.conf.parent / "ibqos.d"
    version = (state / "current").readlink().name
    assert (state / "readbacks" / f"{version}.fabric.json").is_file()  # the planned links, saved at verify
    rc, found = live_status(ibqos_cli, h, sm)
    assert rc == 0, found
    cp = status(ibqos_cli, "--live", "--opensm-conf", sm.conf, "--osm-log", sm.log, "--sim-socket", h.sock)
    assert f"plan: {state / 'current' / 'plan.json'} (applied v0001; --plan overrides)" in cp.stdout

    # a planned switch-to-switch link goes down (ibsim's Unlink), OpenSM re-sweeps
    desc, port = switch_link(read_live(h.env))
    h.unlink(desc, port, sm=sm)
    rc, found = live_status(ibqos_cli, h, sm)
    assert rc == 1 and "link-down" in kinds(found), found
    down = next(f for f in found if f["kind"] == "link-down")
    assert any(f"{desc}:{port}" in link for link in down["links"]), down
    h.relink(desc, port, sm=sm)
    rc, found = live_status(ibqos_cli, h, sm)
    assert rc == 0, found

    # the tables OpenSM programs change behind ibqos's back: plan B's table file, a heavy sweep
    plan_b, _ = make_plan_file(tmp_path, "b", 25)
    tables_b = Path(render_plan(plan_b, tmp_path / "cfg-b")["plugin-tables.conf"]).read_text()
    Path(parse(sm.conf.read_text())["event_plugin_options"]).write_text(tables_b)
    mark = sm.sweeps()
    os.kill(sm.pid, signal.SIGHUP)
    sm.wait_for_sweeps(mark + 1)
    # written through the managed path, so the stored version changed by hand as well
    rc, found = live_status(ibqos_cli, h, sm)
    assert rc == 1 and kinds(found) == ["tampered", "tables"], found
    assert found[0]["message"].startswith(f"TAMPERED: {state / version}")
    assert "differ from" in found[1]["message"] and str(state / "current" / "plan.json") in found[1]["message"]


def test_an_sm_that_is_gone_is_a_finding(ibqos_cli, applied):
    """redsm: OpenSM stopped (crashed, or `systemctl stop`): the switches keep the tables it
    programmed, so every check passed on them and status said 'status: OK', exit 0, with no SM
    on the subnet to configure a port that comes up or answer a path query. Now `sminfo`, out
    of the port the fabric is read through, finds no SM: one finding, exit 1, with or without
    --opensm-conf."""
    h, sm = applied
    rc, found = live_status(ibqos_cli, h, sm)
    assert rc == 0, found
    sm.stop()
    rc, found = live_status(ibqos_cli, h, sm)
    assert rc == 1 and kinds(found) == ["no-sm"], found
    assert found[0]["message"].startswith("no SM answers on this subnet (sminfo out of 0x"), found
    rc, found = findings(ibqos_cli, "--live", "--sim-socket", h.sock)
    assert rc == 1 and kinds(found) == ["no-sm"], found
    assert "sminfo out of libibumad's first port" in found[0]["message"], found


def test_dla_refused_with_a_fallback_in_force_exits_1(ibqos_cli, tmp_path, ibsim_fabric):
    """A fat tree is no dragonfly: dla refuses (D1A0), dfsssp routes; the QoS plan is not in force."""
    plan, plan_path = make_plan_file(tmp_path, "a", 40)
    files = render_plan(plan, tmp_path / "cfg")
    net = fat_tree().write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        sm = h.start_sm(engine=CHAIN, plugin=True, conf_files=[files["opensm.conf"]])
        rc, found = live_status(ibqos_cli, h, sm, "--plan", plan_path)
        record = json.loads((sm.dumps / "ibqos-dla.json").read_text())
    assert record["engine"]["status"] == "refused"
    assert rc == 1
    qos = next(f for f in found if f["kind"] == "qos-not-in-force")
    engine = qos["engine"]
    assert engine in ("dfsssp", "lash"), qos
    assert qos["message"].startswith(
        f"QoS not in force: {engine} routes (dla refused: {record['engine']['error']}: {record['engine']['reason']})"
    )


# ---- tables changed on the live switches after the apply (SMP writes, smp_edit.py) -----------


def live_verdict(ibqos_cli, h, sm) -> tuple[int, str]:
    """`status --live` (text) and `verify --live`: (status's exit code, its last stderr line),
    and the same of verify's, as an admin reads them."""
    s = status(ibqos_cli, "--live", "--opensm-conf", sm.conf, "--osm-log", sm.log, "--sim-socket", h.sock)
    v = ibqos_cli("verify", "--live", "--osm-log", sm.log, env=h.env, timeout=300)
    last = [(cp.returncode, (cp.stderr.strip().splitlines() or [""])[-1]) for cp in (s, v)]
    return last[0] + last[1]


def test_lft_entries_changed_on_a_live_switch_are_findings(ibqos_cli, applied):
    """One CA's LID rewritten on its switch after apply: sent back and forth with a neighbour
    (a routing loop), to 0xFF, to port 0 (the switch itself) and to a port the switch has not
    (black holes). `status --live` and `verify --live` exit 1 naming it, and 0 once the
    entries are back (the existing routing-loop test edits a saved read-back instead)."""
    h, sm = applied
    fabric = read_live(h.env)
    dr = dr_paths(h, fabric)
    ca = next(n for n in fabric.cas() if n.desc.startswith("ca-g2"))
    cport = next(p for p in ca.ports.values() if p.remote)
    sw = fabric.nodes[cport.remote[0]]
    p, (peer, q) = next(
        (p.num, p.remote) for p in sw.ports.values() if p.remote and fabric.nodes[p.remote[0]].kind == "switch"
    )
    others = sum(1 for _ in fabric.cas()) - 1  # every other CA sends to this LID
    home, peer_home = sw.lft[cport.lid], fabric.nodes[peer].lft[cport.lid]

    assert lft_entry(h, dr[sw.guid], cport.lid, p) == p
    assert lft_entry(h, dr[peer], cport.lid, q) == q
    rc, found = live_status(ibqos_cli, h, sm)
    assert rc == 1 and kinds(found) == ["routing-loop"] and found[0]["pairs"] == others, found
    assert live_verdict(ibqos_cli, h, sm) == (
        1,
        "ibqos: error: status: 1 finding(s): routing-loop",
        1,
        f"ibqos: error: verify: {others} pairs in routing loops (e.g. {found[0]['message'].split('(e.g. ')[1]}",
    )
    lft_entry(h, dr[peer], cport.lid, peer_home)
    for hole in (NO_ROUTE, 0, sw.nports + 1):
        assert lft_entry(h, dr[sw.guid], cport.lid, hole) == hole
        rc, found = live_status(ibqos_cli, h, sm)
        assert rc == 1 and kinds(found) == ["unreachable"] and found[0]["pairs"] == others, (hole, found)
        assert live_verdict(ibqos_cli, h, sm) == (
            1,
            "ibqos: error: status: 1 finding(s): unreachable",
            1,
            f"ibqos: error: verify: {others} unreachable pairs",
        ), hole
    lft_entry(h, dr[sw.guid], cport.lid, home)
    assert live_status(ibqos_cli, h, sm) == (0, [])


def test_sl2vl_changed_on_live_switches_is_drift_and_a_collapse_is_a_credit_loop(ibqos_cli, applied):
    """One SL2VL table of one switch changed after apply: the tables differ from the plan
    (status exit 1; verify, which holds no plan, finds the routing sound). Then dla's VL step
    at every global-to-local hop undone for SL 0 (the VL it came in on): a credit loop, which
    both name."""
    h, sm = applied
    fabric = read_live(h.env)
    dr = dr_paths(h, fabric)

    def switch_ports(node):
        return [p.num for p in node.ports.values() if p.remote and fabric.nodes[p.remote[0]].kind == "switch"]

    sw = next(n for n in fabric.switches() if switch_ports(n))
    a, b = switch_ports(sw)[:2]
    planned = sl2vl(h, dr[sw.guid], a, b)
    drifted = ("7" if planned[0] != "7" else "6") + planned[1:]
    assert sl2vl(h, dr[sw.guid], a, b, drifted) == drifted
    rc, found = live_status(ibqos_cli, h, sm)
    assert rc == 1 and kinds(found) == ["tables"], found
    message = found[0]["message"]
    assert f"{sw.desc}:{b} in {a} " in message and f"SL2VL {drifted} planned {planned}" in message, message
    assert live_verdict(ibqos_cli, h, sm)[:3] == (1, "ibqos: error: status: 1 finding(s): tables", 0)
    sl2vl(h, dr[sw.guid], a, b, planned)

    collapsed = 0
    for node in fabric.switches():
        ports = switch_ports(node)
        for a in ports:
            for b in ports:
                table = sl2vl(h, dr[node.guid], a, b) if a != b else ""
                if table[:1] == "3":  # SL 0 (best effort) climbs from VL 2 to 3 after a global hop
                    sl2vl(h, dr[node.guid], a, b, "2" + table[1:])
                    collapsed += 1
    assert collapsed > 0
    rc, found = live_status(ibqos_cli, h, sm)
    assert rc == 1 and "credit-loop" in kinds(found), found
    s_rc, s_line, v_rc, v_line = live_verdict(ibqos_cli, h, sm)
    assert s_rc == 1 and "credit-loop" in s_line, s_line
    assert (v_rc, v_line) == (1, "ibqos: error: verify: credit loop: the channel dependency graph has a cycle")
