"""dla and the verifier on fabrics no generator draws (odd_fabrics.py): one switch, two switches
with parallel cables, rings and a torus, a dragonfly with a rack of switches without CAs, CAs
with both ports on one switch or on two racks, a router, a CA on a switch's highest port with
the ports below it empty, node descriptions with quotes, braces and non-ASCII bytes, a switch
port cabled to itself, a switch cabled to the SM's switch only.

Real OpenSM 3.3.23 with the rendered chain dla,dfsssp,lash,nue and the four-class plan's
tables, the fabric read back live: OpenSM keeps running; every CA port pair is delivered;
no credit loop (per class SL under dla, the SA's path SLs under a layered fallback); under dla
the SL2VL and VLArb read back are the plan's; a refusal is exactly one D1A line.
Then routing depends on the fabric alone: the same fabric with other port numbers and its
nodes listed in another order (GUIDs pinned) gets the same routes, and twice the same LFTs.
Then faults under a running OpenSM (a rack cut off, a rack reached through one other only,
a rail of a dual-rail HCA, one of two parallel cables) and their repair; and two hosts cabled
back to back, with no switch at all."""

from __future__ import annotations

import re
from pathlib import Path

import adversarial_fabrics
import odd_fabrics as fabrics
import pytest
from dla_testlib import assert_same_routes, change_links
from handnet import HandNet
from ibqos import osmlog
from ibqos.conformance import diff_programmed, expected_from_plan
from ibqos.fabric.dla_record import read_record
from ibqos.fabric.dumps import load_dumps
from ibqos.fabric.groups_in_force import groups_in_force
from ibqos.fabric.model import Fabric
from ibqos.plan import Plan
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from ibqos.redline import LAYERED
from ibqos.render import render_plan
from ibqos.render.fallback import DLA_CHAIN
from ibqos.verify import verify_fabric
from ibqos.verify.sa_paths import query_path_sls
from ibqos_sim.harness import Harness

pytestmark = pytest.mark.fabric

ROOT = Path(__file__).resolve().parents[2]
POLICY = ROOT / "examples" / "four-class.yaml"
D1A = re.compile(r"ERR D1A\d: dla: (.*)$")
GROUP_MAP = "ibqos-dla-groups"  # dla_groupmap.h: the map a sweep stores in the run directory


def plan_files(tmp_path: Path) -> tuple[Plan, Path]:
    """four-class.yaml with class CL's share raised on global ports: the global tables differ
    from every other role's, so a port given the wrong role shows."""
    share = "    bandwidth: 50\n"
    text = POLICY.read_text().replace(share, share + "    roles: {global: {bandwidth: 55}}\n")
    assert "roles:" in text
    policy = tmp_path / "policy.yaml"
    policy.write_text(text)
    plan = make_plan(load_policy(policy), cap=(8, 8))
    return plan, render_plan(plan, tmp_path / "cfg")["opensm.conf"]


def class_sls(plan: Plan) -> list[int]:
    """One SL of every class (dla routes every SL of a class alike)."""
    return [plan.sl2class.index(c) for c in sorted(set(plan.sl2class))]


def routers_unreached(fabric: Fabric) -> list[str]:
    """(switch, router LID) where following the LFTs from that switch does not end at the
    router's port (the verifier judges CA port pairs only)."""
    out = []
    for rt in (n for n in fabric.nodes.values() if n.kind == "router"):
        for rp in (p for p in rt.ports.values() if p.lid):
            for sw in fabric.switches():
                node, hops = sw, 0
                while node.kind == "switch" and hops <= len(fabric.nodes):
                    port = node.ports.get(node.lft[rp.lid] if rp.lid < len(node.lft) else 255)
                    if port is None or port.remote is None:
                        break
                    node, hops = fabric.nodes[port.remote[0]], hops + 1
                if (node.guid, hops > 0) != (rt.guid, True):
                    out.append(f"{sw.desc} -> {rt.desc} LID {rp.lid}: ends at {node.desc} after {hops} links")
    return out


def judge(h: Harness, sm, plan: Plan, cas: int, lines=None) -> tuple[str, Fabric, list[str]]:
    """(engine in force, fabric read back, problems), from OpenSM's log `lines` (default: all)."""
    lines = sm.lines() if lines is None else lines
    engine = osmlog.configured_engines(lines)[-1]
    said = [m.group(1) for ln in lines if (m := D1A.search(ln.text))]
    fabric = h.read_back(save=False)
    problems = []
    if engine == "dla":
        problems += [f"dla routed and said {s}" for s in said]
        record = read_record(sm.dumps)
        problems += diff_programmed(fabric, expected_from_plan(plan), record=record)
        used = groups_in_force(fabric, record)  # the checker's discovery agrees with dla's,
        # unless dla passed over partitions that needed too many VLs (the checker knows none)
        skipped = record is not None and record.groups is not None and record.groups.alternative > 0
        problems += [x for x in (None if skipped else used.disagreement, used.broken) if x]
        reports = [verify_fabric(fabric, sl=sl) for sl in class_sls(plan)]
    else:
        if len(said) != 1 or not said[0].startswith("fabric refused: ") or "[rule: " not in said[0]:
            problems.append(f"{engine} routes, dla said {said}")
        psl = query_path_sls(fabric, h.env) if engine in LAYERED else None
        reports = [verify_fabric(fabric, path_sls=psl)]
    for r in reports:
        if not (r.pairs == r.delivered == cas * (cas - 1)):
            problems.append(f"{r.delivered}/{r.pairs} pairs delivered, {cas} CA ports: {r.defects()}")
        if not r.cdg_acyclic:
            problems.append(f"credit loop under {engine}: {' → '.join(r.cycle)}")
    if engine == "dla":  # dfsssp and nue route CA and switch LIDs only (docs/fallback.md)
        problems += [f"no route to router: {x}" for x in routers_unreached(fabric)]
    if not sm.alive():
        problems.append("OpenSM died")
    return engine, fabric, problems


CASES = {
    "one-switch": (fabrics.one_switch, "dla"),
    "two-switches": (fabrics.two_switches, "dla"),
    "hostless-group": (fabrics.hostless_group, "dla"),
    # a ring of 6 reads as 3 groups of 2 pairwise linked (a dragonfly), of 8 as 4 groups of 2
    # in a ring (degraded); a 4x4 torus has no such reading: either way, no credit loop
    "ring-6": (lambda: fabrics.ring(6), None),
    "ring-8": (lambda: fabrics.ring(8), None),
    "ring-5": (lambda: fabrics.ring(5), None),
    "torus-4x4": (lambda: fabrics.torus(4, 4), None),
    "torus-3x4": (lambda: fabrics.torus(3, 4), None),
    # racks of unequal sizes, every pair cabled once: two racks short of one switch each; one
    # rack of 3 among racks of 5; two racks of 2 beside one of 4
    "racks-4-4-3-3": (lambda: fabrics.racks([4, 4, 3, 3]), None),
    "racks-5-5-3": (lambda: fabrics.racks([5, 5, 3]), None),
    "racks-4-2-2": (lambda: fabrics.racks([4, 2, 2]), None),
    "racks-3-3-3-1": (lambda: fabrics.racks([3, 3, 3, 1]), None),
    # trees: three switches in a line (the middle one without CAs), a hub with four spokes
    "line-3": (lambda: fabrics.tree([(0, 1), (1, 2)], [2, 0, 2]), None),
    "star-5": (lambda: fabrics.tree([(0, 1), (0, 2), (0, 3), (0, 4)], [0, 2, 1, 2, 2]), None),
    # one switch more, cabled to the SM's switch only, with CAs or without
    "pendant-2-hosts": (lambda: fabrics.pendant(2), None),
    "pendant-hostless": (lambda: fabrics.pendant(0), None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_odd_fabric(tmp_path, case, ibsim_fabric):
    make, want = CASES[case]
    net, first = make()
    plan, conf = plan_files(tmp_path)
    path = net.write(tmp_path / "fabric.net", first)
    with ibsim_fabric(path, run_dir=tmp_path / "run") as h:
        sm = h.start_sm(engine=DLA_CHAIN, plugin=True, conf_files=[conf])
        try:
            engine, _, problems = judge(h, sm, plan, net.cas())
        finally:
            sm.stop()
    print(f"\n{case}: {engine}")
    assert not problems, "\n".join(problems[:20])
    if want:
        assert engine == want


def test_a_port_cabled_to_itself_is_routed_around(tmp_path, ibsim_fabric):
    """A switch port cabled to itself (a loopback plug) beside a cable between two ports of
    another switch: dla routes as if neither were cabled, and names the plugged port in one
    line; then the plug pulled and put back under the running SM, dla routing each sweep.
    Before: 'ERR D1A0: dla: fabric refused: ; falling back to the next routing engine', the
    record's reason empty too, and dfsssp routed."""
    net, first, (switch, port) = fabrics.self_cabled()
    plan, conf = plan_files(tmp_path)
    net_path = net.write(tmp_path / "fabric.net", first)
    with ibsim_fabric(net_path, run_dir=tmp_path / "run", console=True) as h:
        sm = h.start_sm(engine=DLA_CHAIN, plugin=True, conf_files=[conf], conf={"sweep_interval": 1})
        try:
            lines = sm.lines()
            engine, _, problems = judge(h, sm, plan, net.cas(), lines)
            record = read_record(sm.dumps)
            pulled = h.unlink(switch, port, sm=sm)
            plugged = h.relink(switch, port, sm=sm)
            assert sm.alive()
        finally:
            sm.stop()
    assert (pulled.engine, plugged.engine) == ("dla", "dla"), (pulled.refusals, plugged.refusals)
    assert not any("cabled to itself" in ln.text for ln in pulled.lines)
    assert sum("cabled to itself" in ln.text for ln in plugged.lines) == 1
    assert not problems, "\n".join(problems[:20])
    assert engine == "dla" and record is not None and record.engine.status == "routed"
    said = {ln.text for ln in lines if "cabled to itself" in ln.text}
    assert len(said) == 1, said
    want = rf'dla: switch 0x[0-9a-f]{{16}} "{switch}" port {port} is cabled to itself: no route uses it'
    assert re.fullmatch(want, *said), said


def routes(h: Harness, conf: Path, name: str) -> tuple[Fabric, bytes]:
    run = h.run_sm(engine=DLA_CHAIN, plugin=True, conf_files=[conf], name=name)
    assert run.configured_engines() == ["dla"], [ln.text for ln in run.lines() if "D1A" in ln.text]
    return load_dumps(run.dumps), (run.dumps / "opensm-lfts.dump").read_bytes()


# fabrics dla routes, with parallel cables between one switch pair (hub-switches: two globals,
# odd-cables: two locals, two-switches), a loopback cable, two-port HCAs
RENUMBERED = {
    "hostless-group": fabrics.hostless_group,
    "two-switches": fabrics.two_switches,
    "hub-switches": adversarial_fabrics.hub_switches,
    "odd-cables": adversarial_fabrics.odd_cables,
    "installer": adversarial_fabrics.installer,
}


@pytest.mark.parametrize("case", list(RENUMBERED))
def test_same_routes_whatever_the_port_numbers_and_node_order(tmp_path, case, ibsim_fabric):
    _, conf = plan_files(tmp_path)
    net, first = RENUMBERED[case]()
    net.pin_guids()
    with ibsim_fabric(net.write(tmp_path / "a.net", first), run_dir=tmp_path / "run-a") as h:
        a, lfts = routes(h, conf, "first")
        (h.run_dir / GROUP_MAP).unlink()  # the second run discovers the groups afresh
        _, again = routes(h, conf, "again")
    assert again == lfts
    other = net.renumbered(seed=99)
    order = sorted(other.kind, reverse=True)
    with ibsim_fabric(other.write(tmp_path / "b.net", first, order), run_dir=tmp_path / "run-b") as h:
        b, _ = routes(h, conf, "renumbered")
    assert_same_routes(a, b)


def globals_of(net, rack: int) -> list[tuple[str, int]]:
    """(switch, port) of every cable from `rack` to another rack, with the peer's rack."""
    return [(sw, p) for sw, p, _ in _globals(net, rack)]


def _globals(net, rack: int) -> list[tuple[str, int, int]]:
    mine = f"r{rack}-"
    return [
        (sw, p, int(peer[1 : peer.index("-")]))
        for sw in net.kind
        if sw.startswith(mine) and net.kind[sw] == "Switch"
        for p, (peer, _) in sorted(net.links[sw].items())
        if net.kind[peer] == "Switch" and not peer.startswith(mine)
    ]


def globals_but_to(net, rack: int, keep: int) -> list[tuple[str, int]]:
    """Every cable from `rack` to another rack but those to rack `keep`."""
    return [(sw, p) for sw, p, peer in _globals(net, rack) if peer != keep]


def ca_ports_reached(net, first: str, cut: set[tuple[str, int]]) -> int:
    """CA ports OpenSM still finds from its own (on CA `first`) with the ports at `cut` down:
    those cabled, through a port not cut, to a switch it reaches (a CA forwards nothing)."""
    start = net.links[first][1][0]
    seen, todo = {start}, [start]
    while todo:
        sw = todo.pop()
        for p, (peer, _) in net.links[sw].items():
            if net.kind[peer] == "Switch" and (sw, p) not in cut and peer not in seen:
                seen.add(peer)
                todo.append(peer)
    return sum(
        1
        for ca, ports in net.links.items()
        if net.kind[ca] == "Hca"
        for p, end in ports.items()
        if end[0] in seen and end not in cut and (ca, p) not in cut
    )


def _port_to(net, a: str, b: str, nth: int = 0) -> tuple[str, int]:
    return a, sorted(p for p, (peer, _) in net.links[a].items() if peer == b)[nth]


# fabric -> (builder, {fault: the cables it takes down, (node, port) at one end: a switch's
# where the other is a CA with a non-ASCII description, which OpenSM's dumps do not keep})
FAULTS = {
    # racks of hostless_group(): rack 1 has no CAs
    "hostless-group": (
        fabrics.hostless_group,
        {
            "rack 3 cut off": lambda net: globals_of(net, 3),
            "hostless rack 1 cut off": lambda net: globals_of(net, 1),
            "rack 3 reached through rack 0 only": lambda net: globals_but_to(net, 3, 0),
            "rack 2 reached through the hostless rack only": lambda net: globals_but_to(net, 2, 1),
            "a rail of the dual-rail HCA": lambda net: [_port_to(net, "r2-s1", "rail")],
            "a port of the HCA with both on one switch": lambda net: [_port_to(net, "r3-s0", "both")],
        },
    ),
    "two-switches": (
        fabrics.two_switches,
        {
            "one of the two cables between the switches": lambda net: [_port_to(net, "swA", "swB")],
            "both cables: swB cut off": lambda net: [_port_to(net, "swA", "swB", 0), _port_to(net, "swA", "swB", 1)],
            "a rail of the dual-rail HCA": lambda net: [("rail", 1)],
            "the two-port router's port on swA": lambda net: [_port_to(net, "swA", "gw2")],
        },
    ),
    "one-switch": (fabrics.one_switch, {"a port of the two-port HCA": lambda net: [("dual", 2)]}),
}


@pytest.mark.parametrize("fab", list(FAULTS))
def test_faults_under_a_running_sm(tmp_path, fab, ibsim_fabric):
    """Cables taken down through ibsim's console, one fault at a time, then brought back. A
    rack whose every global cable goes down vanishes from OpenSM's view; one left with a cable
    to a single other rack is reached through it. dla routes what is left, or refuses it with
    one line and the fallback routes it; never a credit loop; every CA port still found is
    routed (with the plan's tables under dla); the repair gives back dla's pristine LFTs."""
    make, cuts = FAULTS[fab]
    net, first = make()
    plan, conf = plan_files(tmp_path)
    problems, seen = [], []
    with ibsim_fabric(net.write(tmp_path / "fabric.net", first), run_dir=tmp_path / "run", console=True) as h:
        sm = h.start_sm(engine=DLA_CHAIN, plugin=True, conf_files=[conf], conf={"sweep_interval": 1})
        try:
            pristine = {n.guid: list(n.lft) for n in sm.load_dumps().switches()}
            for name, cables in cuts.items():
                ends = cables(net)
                faults = [("link", net.desc.get(node, node), p) for node, p in ends]  # by description
                cut = {end for node, p in ends for end in ((node, p), net.links[node][p])}
                sweep = change_links(h, sm, faults, down=True)
                engine, _, found = judge(h, sm, plan, ca_ports_reached(net, first, cut), sweep.lines)
                seen.append(f"{name}: {engine}")
                problems += [f"{name} ({engine}): {x}" for x in found]
                sweep = change_links(h, sm, faults, down=False)
                engine, _, found = judge(h, sm, plan, net.cas(), sweep.lines)
                back = {n.guid: list(n.lft) for n in sm.load_dumps().switches()}
                problems += [f"{name}, repaired: {x}" for x in found]
                if engine != "dla" or back != pristine:
                    problems.append(f"{name}: after the repair {engine}, LFTs pristine: {back == pristine}")
        finally:
            sm.stop()
    print("\n".join(seen))
    assert not problems, "\n".join(problems[:30])


def test_hosts_back_to_back(tmp_path, ibsim_fabric, ibqos_cli):
    """Two hosts cabled port to port, no switch: OpenSM brings both ports up, nothing to
    route; `ibqos verify` delivers the two pairs in no switch hop (before: internal error,
    exit 70, IndexError in the array verifier)."""
    net = HandNet(1)
    a, b = net.hca("a", ports=2), net.hca("b", ports=2)
    net.cable(a, b, 1, 1)
    net.cable(a, b, 2, 2)  # the SM's HCA binds port 1: port 2's link is never discovered
    _, conf = plan_files(tmp_path)
    with ibsim_fabric(net.write(tmp_path / "fabric.net", "a"), run_dir=tmp_path / "run") as h:
        sm = h.start_sm(engine=DLA_CHAIN, plugin=True, conf_files=[conf])
        try:
            live = ibqos_cli("verify", "--live", "--osm-log", sm.log, env=h.env, timeout=300)
            dumps = ibqos_cli("verify", sm.dumps, env=h.env, timeout=300)
            assert sm.alive()
        finally:
            sm.stop()
    for cp in (live, dumps):
        assert cp.returncode == 0, cp.stdout + cp.stderr
        assert "delivered: 2/2\n" in cp.stdout and "    0          2 100.00%" in cp.stdout, cp.stdout
