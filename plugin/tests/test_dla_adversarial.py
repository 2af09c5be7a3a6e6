"""dla on fabrics our generator never draws, cabled by hand as an installer would
(adversarial_fabrics.py): 36-port switches with cables on arbitrary ports, installer node
descriptions, unequal racks, a switch never installed, two racks linked only through others,
racks in a chain, loopback and parallel cables, a two-port HCA on two racks, the SM on a
global-heavy switch. Real OpenSM with the rendered chain dla,dfsssp,lash,nue, judged by
ibqos.verify and ibdmchk (with the SA's path SLs when a fallback engine routes); then faults,
single and double, on a running OpenSM on the installer fabric.

"Minimal" is the dragonfly's: no route takes more switch links than the best path with at most
one global link (local, global, local), computed here from the cabling and the rack names."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import adversarial_fabrics as fabrics
import pytest
from dla_testlib import change_links, start_dla
from ibqos import osmlog
from ibqos.fabric.model import Fabric
from ibqos.redline import LAYERED
from ibqos.render.fallback import DLA_CHAIN, fallback_options
from ibqos.verify import iter_routes, verify_fabric
from ibqos.verify.ibdmchk import run_ibdmchk
from ibqos.verify.sa_paths import query_path_sls
from ibqos_sim.harness import Harness
from ibqos_sim.harness.fabric import SmDaemon

pytestmark = pytest.mark.fabric

D1A = re.compile(r"ERR D1A\d: dla: (.*)$")
RACK = re.compile(r"sw-r(\d+)-u\d+")


def rack_of(fabric: Fabric) -> dict[int, int]:
    return {n.guid: int(RACK.search(n.desc).group(1)) for n in fabric.switches()}


def nonminimal(fabric: Fabric) -> list[str]:
    """Routes between racks that are cabled directly which are longer than the best
    local-global-local path (routes inside a rack: longer than its local distance)."""
    rack = rack_of(fabric)
    sw = {n.guid: n for n in fabric.switches()}
    links = {(g, p.remote[0]) for g, n in sw.items() for p in n.ports.values() if p.remote and p.remote[0] in sw} - {
        (g, g) for g in sw
    }
    local = {(a, b) for a, b in links if rack[a] == rack[b]}

    def ld(a: int, b: int) -> int:
        if a == b:
            return 0
        if (a, b) in local:
            return 1
        return 2 if any((a, c) in local and (c, b) in local for c in sw) else 99

    def best(s: int, t: int) -> int | None:
        if rack[s] == rack[t]:
            return ld(s, t)
        ways = [ld(s, u) + 1 + ld(v, t) for u, v in links if rack[u] == rack[s] and rack[v] == rack[t]]
        return min(ways) if ways else None  # no direct cable: a detour, not judged here

    out = []
    for r in iter_routes(fabric):
        path = [h[0] for h in r.hops]
        m = best(path[0], path[-1])
        if m is not None and len(path) - 1 > m:
            out.append(" -> ".join(sw[g].desc for g in path) + f" (best {m})")
    return out


def judge(h: Harness, sm: SmDaemon, engine: str | None, work: Path):
    """(verify report, ibdmchk result): a layered fallback is judged with the SA's path SLs."""
    fabric = sm.load_dumps()
    psl = query_path_sls(fabric, h.env) if engine in LAYERED else None
    report = verify_fabric(fabric, path_sls=psl)
    shutil.rmtree(work, ignore_errors=True)
    chk = run_ibdmchk(sm.dumps, fabric, work, path_sls=psl)
    return fabric, report, chk


# name: (fabric, what dla must do, VLs of class 0 it may use)
CASES = {
    "installer": (fabrics.installer, "routed", [0, 1]),
    "odd-cables": (fabrics.odd_cables, "routed", [0, 1]),
    "missing-switch": (fabrics.missing_switch, "routed", [0, 1]),
    "no-direct-pair": (fabrics.no_direct_pair, "routed", [0, 1, 2]),
    "half-rack": (fabrics.half_rack, "routed", [0, 1]),
    "hub-switches": (fabrics.hub_switches, "routed", [0, 1]),
    "pairs-of-two": (fabrics.pairs_of_two, "routed", [0, 1]),
    "spur": (fabrics.spur, "routed", [0, 1, 2]),
    "chain": (fabrics.chain, "refused", None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_hand_cabled_fabric(tmp_path, case, ibsim_fabric):
    make, want, vls = CASES[case]
    net, first = make()
    path = net.write(tmp_path / "fabric.net", first)
    cas = net.cas()
    with ibsim_fabric(path, run_dir=tmp_path / "run") as h:
        sm = start_dla(h, engine=DLA_CHAIN, conf=fallback_options(8))
        lines = sm.lines()
        engine = osmlog.configured_engines(lines)[-1]
        fabric, report, chk = judge(h, sm, engine, tmp_path / "ibdmchk")
        assert sm.alive()
    said = [m.group(1) for ln in lines if (m := D1A.search(ln.text))]
    assert report.pairs == cas * (cas - 1) == report.delivered, report.defects()
    assert report.cdg_acyclic, report.cycle
    assert not chk.credit_loops and "-I- no credit loops found" in chk.output, chk.output[-2000:]
    if want == "routed":
        assert said == [] and engine == "dla", said
        assert set(report.vls_used) <= set(vls), report.vls_used
        assert nonminimal(fabric) == []
        sizes = {"missing-switch": "3 to 4", "half-rack": "2 to 4"}.get(case)
        if sizes:  # the summary says the racks differ in size
            assert any(f"dla: 5 groups of {sizes} switches" in ln.text for ln in lines)
    else:
        # exactly one line, with its reason and rule, and a deadlock-free fallback
        assert len(said) == 1, said
        assert said[0].startswith("fabric refused: ") and "[rule: " in said[0], said[0]
        assert "groups 0 (incl. switch" in said[0] and "joined neither by a global link" in said[0]
        assert engine == "dfsssp"


# Faults by hand-picked cables: (rack, unit index) at both ends; a switch by (rack, unit
# index); ("ca", name, port) for one port of a CA. Each is taken down, judged, brought back,
# judged again: dla again, with its pristine LFTs.
def _switch(fab: str, r: int, i: int) -> str:
    units = (10, 12, 14) if fab in ("odd-cables", "spur") else fabrics.UNITS
    return fabrics.sw_name(r + 1, units[i])


FAULTS = {
    "installer": {
        "only global of racks 1-4": [(0, 2, 3, 3)],
        "local link in rack 2": [(1, 0, 1, 3)],
        "switch with no hosts": [(0, 2)],
        "switch with hosts": [(2, 0)],
        "both globals of racks 1-2": [(0, 0, 1, 2), (0, 3, 1, 0)],
        "both globals of the SM's switch": [(0, 1, 2, 1), (0, 1, 2, 3)],
        "local and global of one switch": [(3, 2, 3, 0), (3, 2, 4, 3)],
        "global-heavy switch and a local": [(4, 3), (1, 1, 1, 2)],
    },
    "half-rack": {
        "global of the half rack": [(4, 0, 0, 3)],
        "local link of a full rack": [(1, 0, 1, 2)],
        "switch of a full rack": [(2, 1)],
        "switch of the half rack": [(4, 1)],
        "global of the half rack and one between full racks": [(4, 1, 2, 1), (0, 0, 1, 1)],
    },
    "missing-switch": {
        "local link of the 3-switch rack": [(4, 0, 4, 2)],
        "switch of the 3-switch rack": [(4, 2)],
        "global of the 3-switch rack": [(1, 0, 4, 0)],
        "local of the 3-switch rack and a global elsewhere": [(4, 0, 4, 1), (0, 2, 3, 3)],
    },
    "spur": {
        "local link of the spur rack": [(4, 0, 4, 1)],
        "one of the spur rack's two globals": [(4, 0, 0, 1)],
        "switch of a rack the spur reaches through rack 1": [(2, 2)],
    },
    "odd-cables": {
        "one port of the two-port HCA": [("ca", "node050 HCA-1", 1)],
        "the loopback cable": [("loop", 2, 0)],
        "one of two parallel local cables": [(1, 0, 1, 1)],
        "a global of the cross-rack triangle": [(0, 0, 1, 1)],
        "global of a triangle and the two-port HCA's other port": [(2, 1, 3, 0), ("ca", "node050 HCA-1", 2)],
        "switch of the two-port HCA and a local": [(3, 0), (0, 0, 0, 2)],
    },
}


def _faults(fab: str, net, spec) -> list[tuple[str, str, int | None]]:
    out = []
    for f in spec:
        if f[0] == "ca":
            out.append(("link", f[1], f[2]))
        elif f[0] == "loop":
            sw = _switch(fab, f[1], f[2])
            out.append(("link", sw, net.port_to(sw, sw)))
        elif len(f) == 2:
            out.append(("switch", _switch(fab, *f), None))
        else:
            a, b = _switch(fab, f[0], f[1]), _switch(fab, f[2], f[3])
            out.append(("link", a, net.port_to(a, b)))
    return out


def _ca_ports_left(net, faults) -> int:
    gone = {node for kind, node, _ in faults if kind == "switch"}
    cut = {(node, port) for kind, node, port in faults if kind == "link"}
    left = 0
    for ca, ports in net.links.items():
        if net.kind[ca] != "Hca":
            continue
        left += sum(1 for p, (sw, sp) in ports.items() if sw not in gone and not {(ca, p), (sw, sp)} & cut)
    return left


@pytest.mark.parametrize("fab", list(FAULTS))
def test_faults_on_hand_cabled_fabric(tmp_path, fab, ibsim_fabric):
    """A single fault must be routed by dla; a double one may be refused with exactly one
    D1A line, the fallback then judged with its path SLs. Never a credit loop."""
    net, first = CASES[fab][0]()
    path = net.write(tmp_path / "fabric.net", first)
    problems, seen = [], []
    with ibsim_fabric(path, run_dir=tmp_path / "run", console=True) as h:
        sm = start_dla(h, engine=DLA_CHAIN, conf={"sweep_interval": 1, **fallback_options(8)})
        pristine = {n.guid: list(n.lft) for n in sm.load_dumps().switches()}
        for name, spec in FAULTS[fab].items():
            faults = _faults(fab, net, spec)
            cas = _ca_ports_left(net, faults)
            sweep = change_links(h, sm, faults, down=True)
            _, report, chk = judge(h, sm, sweep.engine, tmp_path / "ibdmchk")
            said = [m.group(1) for ln in sweep.lines if (m := D1A.search(ln.text))]
            seen.append((name, sweep.engine, report.vls_used, said))
            if sweep.engine != "dla" and (len(faults) == 1 or len(said) != 1):
                problems.append(f"{name}: routed by {sweep.engine}, dla said {said}")
            if report.delivered != report.pairs or report.pairs != cas * (cas - 1):
                problems.append(f"{name}: {report.delivered}/{report.pairs} pairs, {cas} CA ports")
            if not report.cdg_acyclic or chk.credit_loops:
                problems.append(f"{name}: credit loop under {sweep.engine}: {report.cycle[:6]}")
            if sweep.engine == "dla" and not set(report.vls_used) <= {0, 1, 2}:
                problems.append(f"{name}: VLs {report.vls_used}")
            sweep = change_links(h, sm, faults, down=False)
            back = {n.guid: list(n.lft) for n in sm.load_dumps().switches()}
            if sweep.engine != "dla" or back != pristine:
                problems.append(f"{name}: after restore {sweep.engine}, LFTs pristine: {back == pristine}")
            assert sm.alive(), name
    (tmp_path / "outcomes.txt").write_text("\n".join(map(str, seen)))
    assert not problems, "\n".join(problems)
