"""The fault campaign: take links and switches of a running ibsim fabric down one at a time (or
two), let OpenSM re-sweep, judge what it programmed, bring them back and check the fabric
returns to its pristine routing. Shared by plugin/tests/test_dla_faults.py and `make bench`.

    c = Campaign(harness, sm, topo, workdir)      # takes the pristine snapshot
    outcome = c.run([fault])                      # fault, judge, restore, judge again
    outcome.problems                              # [] when the fault was survived

Faults come from the generator's topology (ground truth: which link is terminal, local or
global), never from what the plugin found. Judges: ibqos.verify (every surviving CA pair
delivered, CDG acyclic) and ibdmchk (independent credit-loop check), both on OpenSM's dumps.
"""

from __future__ import annotations

import random
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ibqos.fabric.model import Fabric
from ibqos.faultspec import FaultSpec, ResolvedFault
from ibqos.verify import verify_fabric
from ibqos.verify.ibdmchk import run_ibdmchk
from ibqos.verify.sa_paths import query_path_sls

from .harness.resweep import Resweep, SweepMark, wait_resweep
from .harness.topology import Topology

if TYPE_CHECKING:
    from .harness import Harness, SmDaemon

ENGINE = "dla"
MAX_VLS_DEGRADED = 3  # per class, under any single fault (issue 10)
PRISTINE_VLS = [0, 1]  # class 0's pair: Fig. 8
LAYERED_ENGINES = ("dfsssp", "lash")  # deadlock-free by path SL layers
KINDS = ("terminal", "local", "global", "switch")  # of a single fault, in campaign order


def link_kind(topo: Topology, a: str, b: str) -> str:
    na, nb = topo.nodes[a], topo.nodes[b]
    if na.kind != "Switch" or nb.kind != "Switch":
        return "terminal"
    return "local" if na.group == nb.group else "global"


def link_fault(topo: Topology, a: str, pa: int, b: str, pb: int) -> ResolvedFault:
    """The link on port `pa` of `a` (to port `pb` of `b`), named by `a`. A two-port CA keeps
    its other link: not cut off."""
    cas = tuple(sorted(n for n in (a, b) if topo.nodes[n].kind != "Switch" and len(topo.nodes[n].links) == 1))
    return ResolvedFault(
        FaultSpec("link", a, pa, f"link:{a}[{pa}]"), a, pa, (b, pb), f"{link_kind(topo, a, b)} link", cas
    )


def switch_fault(topo: Topology, name: str) -> ResolvedFault:
    """The switch `name`; the CAs cut off are those whose every link is to it."""
    cas = tuple(
        sorted(
            {
                peer
                for peer, _ in topo.nodes[name].links.values()
                if topo.nodes[peer].kind == "Hca" and all(n == name for n, _ in topo.nodes[peer].links.values())
            }
        )
    )
    return ResolvedFault(FaultSpec("switch", name, None, f"switch:{name}"), name, None, None, "switch", cas)


def sm_attachment(topo: Topology) -> tuple[str, str]:
    """(CA, switch) where ibsim attaches OpenSM: the first node of the net file (a CA)."""
    ca = topo.cas[0]
    return ca.name, ca.links[1][0]


def expected_pairs(topo: Topology, faults: list[ResolvedFault]) -> int:
    """The CA pairs ibqos.verify counts on OpenSM's dumps with `faults` down: its endpoints are
    CA ports (fabric.index.endpoints), two on a two-port CA, and OpenSM finds only the ports
    its switches still reach from the SM's: a leaf cut off by the faults, with its hosts, is
    not in the dumps, though no fault named those hosts. Every endpoint against every other."""
    down_sw = {f.node for f in faults if f.kind == "switch"}
    down = {end for f in faults if f.kind != "switch" and f.peer for end in ((f.node, f.port), f.peer)}
    _, sm_sw = sm_attachment(topo)
    seen, todo, ports = {sm_sw}, [sm_sw], 0
    while todo:
        for peer, pp in topo.nodes[todo.pop()].links.values():
            if peer in down_sw or (peer, pp) in down:
                continue
            if topo.nodes[peer].kind != "Switch":
                ports += 1
            elif peer not in seen:
                seen.add(peer)
                todo.append(peer)
    return ports * (ports - 1)


def single_faults(topo: Topology) -> tuple[list[ResolvedFault], list[ResolvedFault]]:
    """(faults, excluded): every link (switch side first) and every switch, except the SM's own
    terminal link and switch, which would cut OpenSM off the fabric it is meant to re-route
    (on a real cluster a standby SM takes over: a fresh start, not a re-sweep)."""
    sm_ca, sm_sw = sm_attachment(topo)
    faults: list[ResolvedFault] = []
    excluded: list[ResolvedFault] = []
    for link in topo.links():
        # a terminal link is named by its switch end
        a, pa, b, pb = link if topo.nodes[link[0]].kind == "Switch" else (link[2], link[3], link[0], link[1])
        f = link_fault(topo, a, pa, b, pb)
        (excluded if sm_ca in (a, b) else faults).append(f)
    for sw in topo.switches:
        f = switch_fault(topo, sw.name)
        (excluded if sw.name == sm_sw else faults).append(f)
    faults.sort(key=lambda f: (KINDS.index(f.short_kind), f.node, f.port or 0))
    return faults, excluded


def _nodes(f: ResolvedFault) -> set[str]:
    return {f.node, f.peer[0]} if f.peer else {f.node}


def _touches(f: ResolvedFault, g: ResolvedFault) -> bool:
    """One fault takes down part of the other (a link of a switch that is down, the same
    link): the pair would not be two faults."""
    if f.kind == "switch" or g.kind == "switch":
        return bool(_nodes(f) & _nodes(g))
    return bool({(f.node, f.port), f.peer} & {(g.node, g.port), g.peer})


def double_faults(topo: Topology, n: int, seed: int) -> list[tuple[ResolvedFault, ResolvedFault]]:
    """n distinct seeded random pairs of single faults that do not overlap."""
    faults, _ = single_faults(topo)
    rng = random.Random(seed)
    out: list[tuple[ResolvedFault, ResolvedFault]] = []
    seen = set()
    while len(out) < n:
        f, g = rng.sample(faults, 2)
        key = frozenset((f, g))
        if key in seen or _touches(f, g):
            continue
        seen.add(key)
        out.append((f, g))
    return out


@dataclass
class Judged:
    """One judged state of the fabric (after a fault, or after the restore)."""

    engine: str | None
    refusals: list[str]
    engine_s: float | None
    pairs: int
    delivered: int
    cdg_acyclic: bool
    cycle: list[str]
    ibdmchk_loops: bool | None
    vls_used: list[int]
    hops: dict[int, int]
    lfts_pristine: bool | None = None


@dataclass
class Outcome:
    faults: list[str]
    kinds: list[str]
    expected_pairs: int
    degraded: Judged
    restored: Judged | None = None
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)  # wall s: down, judge, up, rejudge

    @property
    def name(self) -> str:
        return " + ".join(self.faults)

    @property
    def survived(self) -> bool:
        return not self.problems

    @property
    def refused(self) -> bool:
        return self.degraded.engine != ENGINE and bool(self.degraded.refusals)

    def to_json(self) -> dict:
        return asdict(self) | {"name": self.name, "survived": self.survived}


def _lfts(fabric: Fabric) -> dict[int, list[int]]:
    return {n.guid: list(n.lft) for n in fabric.switches()}


def _sl2vl(fabric: Fabric) -> dict[int, dict]:
    return {n.guid: dict(n.sl2vl) for n in fabric.nodes.values()}


class Campaign:
    def __init__(self, harness: Harness, sm: SmDaemon, topo: Topology, workdir: str | Path, *, ibdmchk: bool = True):
        self.h, self.sm, self.topo = harness, sm, topo
        self.work = Path(workdir)
        self.ibdmchk = ibdmchk
        self.pristine = sm.load_dumps()
        self.pristine_lfts = _lfts(self.pristine)
        self.pristine_sl2vl = _sl2vl(self.pristine)
        self.pristine_report = verify_fabric(self.pristine)
        self.pristine_ibdmchk = (
            run_ibdmchk(sm.dumps, self.pristine, self.work / "ibdmchk-pristine").credit_loops if ibdmchk else None
        )

    # ---- one step ------------------------------------------------------------
    def _apply(self, fault: ResolvedFault, down: bool) -> Resweep:
        if fault.kind == "switch":
            sweep = (self.h.switch_down if down else self.h.switch_up)(fault.node, sm=self.sm)
        else:
            sweep = (self.h.unlink if down else self.h.relink)(fault.node, fault.port, sm=self.sm)
        assert sweep is not None, "given the SM, the harness waits for its re-sweep"
        return sweep

    def _reflected(self, fabric: Fabric, faults: list[ResolvedFault], down: bool) -> bool:
        """The dumps show the fabric as ibsim has it now (a heavy sweep that had started
        before the change would not)."""
        by_name = {n.desc: n for n in fabric.nodes.values()}
        for f in faults:
            sw = by_name.get(f.node)
            if f.kind == "switch":
                present = sw is not None
            else:
                port = sw.ports.get(f.port) if sw and f.port is not None else None
                present = port is not None and port.remote is not None
            if present == down:
                return False
        return True

    def _settle(self, first: Resweep, faults: list[ResolvedFault], down: bool) -> tuple[Resweep, Fabric]:
        sweep = first
        for _ in range(3):
            fabric = self.sm.load_dumps()
            if self._reflected(fabric, faults, down):
                return sweep, fabric
            sweep = wait_resweep(self.sm, SweepMark(Path(self.sm.log), sweep.end_offset))
        raise AssertionError(
            f"OpenSM's dumps never showed {', '.join(map(str, faults))} {'down' if down else 'back'} ({self.sm.log})"
        )

    def _judge(self, sweep: Resweep, fabric: Fabric) -> Judged:
        # a layered fallback (dfsssp, lash) is deadlock-free per path SL: judge it with the
        # SLs the SA hands out, as a host would get them
        psl = query_path_sls(fabric, self.h.env) if sweep.engine in LAYERED_ENGINES else None
        rep = verify_fabric(fabric, path_sls=psl)
        loops = None
        if self.ibdmchk:
            work = self.work / "ibdmchk"
            shutil.rmtree(work, ignore_errors=True)
            loops = run_ibdmchk(self.sm.dumps, fabric, work, path_sls=psl).credit_loops
        return Judged(
            engine=sweep.engine,
            refusals=sweep.refusals,
            engine_s=sweep.engine_seconds,
            pairs=rep.pairs,
            delivered=rep.delivered,
            cdg_acyclic=rep.cdg_acyclic,
            cycle=rep.cycle[:8],
            ibdmchk_loops=loops,
            vls_used=list(rep.vls_used),
            hops=dict(rep.hops),
        )

    def _judge_restored(self, sweep: Resweep, fabric: Fabric) -> Judged:
        """Same LFTs and SL2VL as the pristine fabric is the same routing state, already
        judged at the start: reuse that verdict; anything else is judged afresh."""
        if _lfts(fabric) != self.pristine_lfts or _sl2vl(fabric) != self.pristine_sl2vl:
            j = self._judge(sweep, fabric)
            j.lfts_pristine = _lfts(fabric) == self.pristine_lfts
            return j
        r = self.pristine_report
        return Judged(
            engine=sweep.engine,
            refusals=sweep.refusals,
            engine_s=sweep.engine_seconds,
            pairs=r.pairs,
            delivered=r.delivered,
            cdg_acyclic=r.cdg_acyclic,
            cycle=[],
            ibdmchk_loops=self.pristine_ibdmchk,
            vls_used=list(r.vls_used),
            hops=dict(r.hops),
            lfts_pristine=True,
        )

    def settle(self, faults: list[ResolvedFault], *, down: bool) -> tuple[Resweep, Fabric]:
        """Take the faults down (or bring them back, in reverse) and wait until OpenSM's dumps
        show it: the re-sweep that did, and the fabric it programmed."""
        sweeps = [self._apply(f, down=down) for f in (faults if down else list(reversed(faults)))]
        return self._settle(sweeps[-1], faults, down)

    # ---- a whole fault ---------------------------------------------------------
    def run(self, faults: list[ResolvedFault], *, restore: bool = True) -> Outcome:
        t0 = time.monotonic()
        phases: dict[str, float] = {}

        def lap(name: str) -> None:
            phases[name] = round(time.monotonic() - t0 - sum(phases.values()), 3)

        expected = expected_pairs(self.topo, faults)
        sweep, fabric = self.settle(faults, down=True)
        lap("down")
        out = Outcome([str(f) for f in faults], [f.short_kind for f in faults], expected, self._judge(sweep, fabric))
        lap("judge")
        if restore:
            sweep, fabric = self.settle(faults, down=False)
            lap("up")
            out.restored = self._judge_restored(sweep, fabric)
            lap("rejudge")
        out.problems = problems(out, single=len(faults) == 1)
        out.seconds = round(time.monotonic() - t0, 3)
        out.phases = phases
        return out


def problems(o: Outcome, *, single: bool) -> list[str]:
    """What the outcome breaks of issue 10's acceptance. Single faults must be routed by dla,
    every surviving pair delivered, both judges clean, at most 3 VLs per class. A double fault
    may instead be refused with a logged reason and routed by the fallback chain, which must
    be deadlock-free too: no credit loop is ever acceptable."""
    d, out = o.degraded, []
    if d.engine != ENGINE:
        if single or not d.refusals:
            out.append(
                f"routed by {d.engine or 'nothing'}, not {ENGINE}"
                + (f" (refused: {d.refusals[0]})" if d.refusals else " (no refusal in the plugin record)")
            )
        if not d.cdg_acyclic or d.ibdmchk_loops:
            out.append(f"the fallback {d.engine} has credit loops")
    if d.engine == ENGINE or single:
        if d.delivered != d.pairs or d.pairs != o.expected_pairs:
            out.append(f"{d.delivered}/{d.pairs} CA pairs delivered, {o.expected_pairs} expected")
        if not d.cdg_acyclic:
            out.append("verify: CDG cycle " + " -> ".join(d.cycle))
        if d.ibdmchk_loops:
            out.append("ibdmchk: credit loops")
        if len(d.vls_used) > MAX_VLS_DEGRADED:
            out.append(f"VLs {d.vls_used}: more than {MAX_VLS_DEGRADED} per class")
    r = o.restored
    if r is not None:
        if r.engine != ENGINE:
            out.append(f"after restore: routed by {r.engine}, not {ENGINE}")
        if r.vls_used != PRISTINE_VLS:
            out.append(f"after restore: VLs {r.vls_used}, not {PRISTINE_VLS}")
        if not r.lfts_pristine:
            out.append("after restore: LFTs differ from the pristine ones")
        if r.delivered != r.pairs or not r.cdg_acyclic or r.ibdmchk_loops:
            out.append("after restore: not clean (lost pairs or credit loops)")
    return out


def summary(outcomes: list[Outcome]) -> dict[str, dict[str, int]]:
    """Per fault kind: tried, survived, refused."""
    out: dict[str, dict[str, int]] = {}
    for o in outcomes:
        k = "+".join(o.kinds)
        row = out.setdefault(k, {"tried": 0, "survived": 0, "refused": 0})
        row["tried"] += 1
        row["survived"] += o.survived
        row["refused"] += o.refused
    return out
