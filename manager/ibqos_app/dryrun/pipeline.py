"""The dry run's stages, in order. Each is a small method `stage_<name>` of DryRun; the one
driver (ibqos.pipeline) sequences, times and reports them (ReFrame-style named stages). A
defect found on the way is an exception (VerificationFailed); the verdict on a finished run
is ibqos_app.dryrun.verdict's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ibqos.arbiter.e2e import NS_PER_M
from ibqos.conformance import data_vls_shortfall, diff_programmed, expected_from_plan, mtu_findings
from ibqos.docfile import made_dir, write_json
from ibqos.errors import InputError, VerificationFailed
from ibqos.fabric.dla_record import read_record
from ibqos.fabric.dumps import load_dumps
from ibqos.fabric.groups_in_force import groups_in_force
from ibqos.faultspec import check_disjoint as check_disjoint_faults
from ibqos.faultspec import cut_together, parse_fault
from ibqos.faultspec import resolve as resolve_fault
from ibqos.pipeline import Hooks, Pipeline, StageTime, produced
from ibqos.plan import load_plan
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from ibqos.render import render_plan
from ibqos.render.fallback import DLA_CHAIN
from ibqos.render.rules import policy_rules
from ibqos.verify import verify_per_class, worst
from ibqos_sim.harness import Harness, check_sm_run, net_port_types, sm_node_name
from ibqos_sim.harness.ibsim_binary import default_choice, resolve
from ibqos_sim.harness.netfile import check_net, undiscovered
from ibqos_sim.harness.topology import from_spec
from ibqos_sim.sim import SimParams, TrafficSpec, base_lid_note, classes_from_plan, compile_network, simulate
from ibqos_sim.sim.shares import measure_link_shares

from .capacity import FIT_OPTION, SHOWN_PORTS, read_capacity
from .highlimit import overlay_high_limits
from .judge import PROBE_FRACTION, judge_classes
from .report import write_reports
from .verdict import fabric_checks, passed, planned_entries

if TYPE_CHECKING:
    from ibqos.conformance import MtuFinding
    from ibqos.fabric.dla_record import DlaRecord
    from ibqos.fabric.groups_in_force import GroupsInForce
    from ibqos.fabric.model import Fabric
    from ibqos.faultspec import CutTogether, ResolvedFault
    from ibqos.plan import Plan
    from ibqos.policy.model import Policy
    from ibqos.verify.report import VerifyReport
    from ibqos_sim.harness import SmRun
    from ibqos_sim.harness.ibsim_binary import IbsimBinary
    from ibqos_sim.harness.topology import Topology
    from ibqos_sim.sim.result import SimResult
    from ibqos_sim.sim.shares import LinkShares
    from ibqos_sim.sim.traffic import Pattern

    from .capacity import Capacity
    from .judge import ClassVerdict

STAGES = ("launch", "plan", "render", "configure", "readback", "conform", "verify", "simulate", "judge")


@dataclass
class DryRunConfig:
    policy: Path  # a policy (YAML), or a plan an admin made (`ibqos plan`, a .json file): see plan_given
    out: Path
    topology: str | None = "df72"  # generator spec (ibqos_sim.harness.topology.from_spec) ...
    net: Path | None = None  # ... or an ibsim net file
    traffic: Pattern = "uniform"  # the pattern every class's saturating flows follow
    sim_time_us: float = 200.0
    sim_warmup_us: float = 50.0
    seed: int = 1
    voq: bool = True
    faults: tuple[str, ...] = ()  # `--fault` specs (ibqos.faultspec), applied after routing
    ibsim: str | None = None  # "auto" (patched when built), "patched", "debian"; None: IBQOS_IBSIM or auto
    fit_to_fabric: bool = False  # judge a plan fitted to the ports' VLArb capacity when below the policy's
    lmc: int = 0  # the LMC the site's OpenSM runs with (opensm.conf `lmc`): every port 2^lmc LIDs

    @property
    def plan_given(self) -> bool:
        """A plan document (`ibqos plan -o plan.json`) is judged as it is: checked, never planned
        again. A policy is planned here."""
        return self.policy.suffix == ".json"


@dataclass
class DryRunState:
    """What the stages produced, in stage order; None until the stage that produces it ran
    (DryRun's properties of the same name read them, and say so if it did not)."""

    plan: Plan | None = None
    policy: Policy | None = None
    capacity: Capacity | None = None  # the ports' VLArb capacity vs the policy's
    vls_short: str | None = None  # ports whose VLCap is below the plan's data VLs, said once
    ibsim: IbsimBinary | None = None  # the simulator that runs the fabric
    topology: Topology | None = None  # the generator's, when not --net
    rendered: dict[str, Path] = field(default_factory=dict)
    netfile: Path | None = None
    topology_name: str = ""
    harness: Harness | None = None
    sm_run: SmRun | None = None
    engines: list[str] = field(default_factory=list)  # that configured the tables (the last is in force)
    pristine_run: SmRun | None = None  # with faults: the run before them
    faults: list[ResolvedFault] = field(default_factory=list)  # in the order applied
    cut_together: CutTogether | None = None  # what the faults cut off only between them
    refusal: str = ""  # dla's reason when it refused the degraded fabric
    fabric: Fabric | None = None
    conform: list[str] = field(default_factory=list)
    mtu: list[MtuFinding] = field(default_factory=list)  # links below the plan's MTU
    undiscovered: list[str] = field(default_factory=list)  # net-file nodes the SM did not reach
    verify: VerifyReport | None = None
    verify_by_class: dict[str, VerifyReport] = field(default_factory=dict)
    vls_used: list[int] = field(default_factory=list)
    sim: SimResult | None = None
    sim_latency: SimResult | None = None
    sim_probe: SimResult | None = None  # high-priority classes at PROBE_FRACTION of their share
    link_shares: LinkShares | None = None  # the verdict's shares
    verdicts: list[ClassVerdict] = field(default_factory=list)
    stages: list[StageTime] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class DryRun:
    def __init__(
        self,
        cfg: DryRunConfig,
        progress: Callable[[str, float], None] | None = None,
        failed: Callable[[str, BaseException], None] | None = None,
    ):
        self.cfg = cfg
        self.s = DryRunState()
        self._read: tuple[object, DlaRecord | None] = (None, None)  # (run, its record)
        self.progress = progress or (lambda stage, frac: None)
        hooks = Hooks(progress=self.progress)
        if failed is not None:
            hooks.failed = failed
        self.pipeline = Pipeline(STAGES, hooks, self.s.stages)

    # ---- what earlier stages produced ---------------------------------------
    @property
    def plan(self) -> Plan:
        return produced(self.s.plan, "the plan (validate_inputs)")

    @property
    def policy(self) -> Policy:
        return produced(self.s.policy, "the policy (validate_inputs)")

    @property
    def harness(self) -> Harness:
        return produced(self.s.harness, "the ibsim harness (stage launch)")

    @property
    def sm_run(self) -> SmRun:
        return produced(self.s.sm_run, "OpenSM's run (stage configure)")

    @property
    def fabric(self) -> Fabric:
        return produced(self.s.fabric, "the fabric read back (stage readback)")

    @property
    def netfile(self) -> Path:
        return produced(self.s.netfile, "the net file (stage launch or render)")

    @property
    def ibsim(self) -> IbsimBinary:
        return produced(self.s.ibsim, "the ibsim binary (validate_inputs)")

    # ---- driver ------------------------------------------------------------
    def run(self) -> DryRunState:
        self.validate_inputs()  # all of them, before anything is written
        with made_dir(self.cfg.out):  # a run that writes nothing there leaves no empty --out
            try:
                self.pipeline.run(self)

                write_reports(self)
            finally:
                if self.s.harness is not None:
                    self.s.harness.stop()
        return self.s

    def validate_inputs(self) -> None:
        """Policy (planned) or plan (checked), fault specs and the fabric (topology spec or net
        file): a bad one is one InputError line and nothing in --out."""

        if self.cfg.plan_given and self.cfg.fit_to_fabric:
            raise InputError(
                "fitting plans the policy again for the fabric's ports, and a plan is judged as it is: "
                "give the policy to fit",
                file=self.cfg.policy,
                field=FIT_OPTION,
            )
        policy = None if self.cfg.plan_given else load_policy(self.cfg.policy)
        plan = load_plan(self.cfg.policy) if policy is None else None
        for f in self.cfg.faults:  # the spelling now, the names once the fabric is up
            parse_fault(f)
        if self.cfg.net:
            check_net(self.cfg.net)
        else:
            self.s.topology = from_spec(produced(self.cfg.topology, "--topology or --net"))
        self.s.ibsim = resolve(self.cfg.ibsim or default_choice("auto"))
        self.s.notes.append(f"fabric simulated by {self.ibsim.describe()}")
        self.s.policy = policy
        # the policy's own plan (an infeasible policy stops here), or the admin's as it is
        self.s.plan = make_plan(policy) if policy is not None else plan

    # ---- stages ------------------------------------------------------------
    def stage_plan(self) -> str:
        """The policy's plan, judged only on a fabric whose ports hold the policy's capacity
        (launch read it): below it, the run is refused unless --fit-to-fabric asked for a
        plan fitted to the ports (ibqos_app.dryrun.capacity)."""

        if self.s.plan is None:  # a stage run on its own (tests): inputs first
            self.validate_inputs()
            self.cfg.out.mkdir(parents=True, exist_ok=True)
        cap = self.s.capacity
        if cap is not None and not cap.fits and not cap.fitted:
            raise VerificationFailed(f"dry run refused: {self._capacity_where()}: {cap.refusal()}")
        if short := self.s.vls_short:
            raise VerificationFailed(f"dry run refused: {self._where('fabric', 'data_vls')}: fabric.data_vls: {short}")
        if cap is not None and cap.fitted:
            self.s.plan = make_plan(self.policy, cap=cap.plan_cap)
            self.s.notes.append(f"judged the {cap.describe(planned_entries(self.plan))}")
        self.s.notes.extend(self.plan.notes)  # e.g. what OpenSM can program of a 64-entry table
        self.plan.save(self.cfg.out / "plan.json")
        return f"{len(self.plan.classes)} classes, routing {self.plan.fabric.routing}"

    def stage_render(self) -> str:

        # The fabric is known before it runs: node_type filters are resolved against it.
        self._write_net()
        types = net_port_types(self.netfile)
        self.s.rendered = render_plan(self.plan, self.cfg.out / "config", port_types=types)
        self.s.notes += policy_rules(self.plan.classes, types)[2]  # e.g. a port name no port has
        return ", ".join(sorted(self.s.rendered))

    def _write_net(self) -> None:
        if self.s.netfile is not None:
            return
        if self.cfg.net:
            self.s.netfile, self.s.topology_name = self.cfg.net, self.cfg.net.name
        else:
            topo = self.s.topology or from_spec(produced(self.cfg.topology, "--topology or --net"))
            self.s.netfile = topo.write_net(self.cfg.out / "fabric.net")
            self.s.topology_name = f"{self.cfg.topology} ({topo.name}, {len(topo.cas)} CAs)"

    def stage_launch(self) -> str:
        """The fabric first: its ports' VLArb capacity, read back before any SM runs (the
        reader walks it by directed route), decides which plan the run may judge."""

        self._write_net()
        self.s.harness = Harness(
            self.netfile, self.cfg.out / "fabric", console=bool(self.cfg.faults), ibsim=self.ibsim.kind
        )  # faults go down on the console
        self.harness.forget_sm_cache()  # a fresh fabric, whatever ran in --out before
        self.harness.start()
        fabric = self.harness.read_back(save=False)
        self.s.capacity = read_capacity(fabric, self._asked_capacity(), self.cfg.fit_to_fabric, self.cfg.plan_given)
        self.s.vls_short = data_vls_shortfall(fabric, self.plan.fabric.data_vls, SHOWN_PORTS)
        f = self.s.capacity.fabric
        return f"{self.s.topology_name}, VLArb {f[0]}/{f[1]} on {self.s.capacity.ports} ports"

    def _asked_capacity(self) -> tuple[int, int]:
        """The VLArb entries per table the run asks of the ports: the policy's fabric.vlarb_cap,
        or the given plan's tables."""
        if self.s.policy is None:
            return planned_entries(self.plan)
        vc = self.s.policy.fabric.vlarb_cap
        return (vc.high, vc.low)

    def _capacity_where(self) -> str:
        """FILE:LINE: FIELD of the capacity a refusal names."""
        if self.s.policy is None:
            return f"{self.cfg.policy}: fabric.high_cap/low_cap"
        return self._where("fabric", "vlarb_cap") + ": fabric.vlarb_cap"

    def _where(self, *loc: str) -> str:
        """FILE[:LINE] of a policy field (the plan file when a plan was given)."""
        if self.s.policy is None:
            return str(self.cfg.policy)
        file, line = self.s.policy.where(*loc)
        return f"{file}:{line}" if line is not None else str(file or self.cfg.policy)

    def stage_configure(self) -> str:
        run = self._run_sm()
        used = self._engines(run)
        if self._dla and used[-1:] != ["dla"]:
            raise VerificationFailed(
                f"OpenSM fell back to {used[-1] if used else 'nothing'}: "
                f"{self._refusal(run) or 'dla did not configure the tables'}"
            )
        if self.cfg.faults:
            # As on a cluster: the SM routed the healthy fabric (and keeps its cache), then a
            # fault happens and it routes again. A refusal is a finding, reported, not a crash.
            self.s.pristine_run = run
            self._apply_faults()
            run = self._run_sm()
            used = self._engines(run)
            if self._dla and used[-1:] != ["dla"]:
                self.s.refusal = self._refusal(run) or "dla did not configure the tables"
        self.s.sm_run, self.s.engines = run, used
        t = run.engine_seconds()
        return (
            (f"{len(self.s.faults)} fault(s), " if self.s.faults else "")
            + f"tables configured by {used[-1]}"
            + (f" in {t * 1e3:.1f} ms" if t else "")
        )

    @property
    def _dla(self) -> bool:
        return self.plan.fabric.routing == "dla"

    def _run_sm(self):
        """One `opensm --once` with the rendered configuration. Any OpenSM error is an
        external failure, except dla's refusal: its record names it, and the caller reports
        it as what it is, a fabric dla does not route."""

        run = self.harness.run_sm(
            engine=DLA_CHAIN if self._dla else self.plan.fabric.routing,
            plugin=self._dla,
            conf_files=[self.s.rendered["opensm.conf"]],
            conf={"lmc": self.cfg.lmc} if self.cfg.lmc else None,
            check=False,
        )
        record = self._record(run)
        refused = record.engine.error if record and record.refused else None
        check_sm_run(run.lines(), run.rc, run.log, allow=(refused,) if refused else ())
        return run

    def _record(self, run) -> DlaRecord | None:
        """dla's record of `run`, read once per run (29 MB at 10,240 CAs, 8 s to validate)."""
        if not self._dla:
            return None
        if self._read[0] is not run:
            self._read = (run, read_record(run.dumps))
        return self._read[1]

    def _engines(self, run: SmRun) -> list[str]:
        """Engines that configured the tables: dla's record says when dla did; after its
        refusal, without dla, or when it routed nothing (no switch: OpenSM never asked), only
        OpenSM's log names the engine in force (ibqos.osmlog)."""
        record = self._record(run)
        if record is not None and record.engine.status == "routed":
            return ["dla"]
        return run.configured_engines()

    def _refusal(self, run) -> str:
        """dla's reason from its record, "" if it did not refuse (or left no record)."""
        record = self._record(run)
        return (record.refusal if record else None) or ""

    def _apply_faults(self) -> None:
        fabric = load_dumps(produced(self.s.pristine_run, "the run before the faults").dumps)
        sm_node = sm_node_name(self.netfile)
        self.s.faults = [resolve_fault(parse_fault(f), fabric, sm_node=sm_node) for f in self.cfg.faults]
        check_disjoint_faults(self.s.faults)
        self.s.cut_together = cut_together(self.s.faults, fabric, sm_node)
        for f in self.s.faults:
            # a GUID as typed names the node even where its description is shared
            self.harness.unlink(f.spec.node if f.spec.node.lower().startswith("0x") else f.node, f.port)

    def stage_readback(self) -> str:
        fabric = self.harness.read_back(save=False)
        note = f"{len(list(fabric.switches()))} switches, {len(list(fabric.cas()))} CAs"
        if fabric.source.startswith("live:ibsim:") and not self.ibsim.stores_high_limit:
            recorded, conf = overlay_high_limits(fabric, self._record(self.sm_run), self.sm_run.conf)
            self.s.notes.append(
                f"ibsim does not store VLHighLimit, so the model carries what the SM "
                f"sent: {recorded} ports from the dla plugin's record, {conf} from "
                "OpenSM's qos_*_high_limit (docs/ibsim.md)"
            )
        elif self.ibsim.stores_high_limit:
            caps = {(v.high_cap, v.low_cap) for n in fabric.nodes.values() for p in n.ports.values() if (v := p.vlarb)}
            self.s.notes.append(
                "VLHighLimit and VLArb as read back from the patched ibsim, capacity "
                + ", ".join(f"{h}/{lo}" for h, lo in sorted(caps))
            )
        fabric.save(self.cfg.out / "fabric.json")
        self.s.fabric = fabric
        gone = {c for f in self.s.faults for c in (*f.lost_cas, *f.cut_switches)}
        gone |= {f.node for f in self.s.faults if f.kind == "switch"}
        if t := self.s.cut_together:
            gone |= {*t.lost_cas, *t.cut_switches}
        found = [n.desc for n in fabric.nodes.values()]
        self.s.undiscovered = [d for d in undiscovered(self.netfile, found) if d not in gone]
        return note

    def stage_conform(self) -> str:
        expected = expected_from_plan(self.plan)
        groups: GroupsInForce | dict[int, int] | None = None
        record = self._record(self.sm_run)
        self._read = (None, None)  # the record's last reader: its objects go (270 MB at 10k CAs)
        if expected.dragonfly and record is not None and record.groups is not None:
            # the groups dla routed with (docs/groups.md), cross-checked with the checker's

            groups = groups_in_force(self.fabric, record)
            if groups.disagreement:
                self.s.notes.append(f"groups: {groups.disagreement}")
        elif self.s.faults and expected.dragonfly:
            # a degraded dragonfly is no clique cover: its groups are those it had before, dla's
            # from its record of the healthy fabric (one it routed as degraded has no exact
            # partition to find either: the search ended in NotADragonfly, exit 70)
            pristine = self._record(produced(self.s.pristine_run, "the run before the faults"))
            groups = groups_in_force(self.fabric, pristine)
            self._read = (None, None)
        self.s.conform = diff_programmed(self.fabric, expected, groups, degraded=bool(self.s.faults))
        self.s.mtu = mtu_findings(self.fabric, self.plan.fabric.mtu)
        return ("every port equals the plan" if not self.s.conform else f"{len(self.s.conform)} differences") + (
            f"; {len(self.s.mtu)} ports below the plan's MTU" if self.s.mtu else ""
        )

    def stage_verify(self) -> str:
        reports = verify_per_class(self.fabric, self.plan)
        self.s.verify_by_class = reports
        self.s.verify = w = worst(reports)
        self.s.vls_used = sorted({vl for r in reports.values() for vl in r.vls_used})
        self.s.notes += [m for m in w.warnings if m not in self.s.notes]  # what the verdict rests on (LMC)
        return f"{w.delivered}/{w.pairs} pairs per SL, VLs {self.s.vls_used}, " + (
            "; ".join(w.defects()) if not w.ok else "CDG acyclic"
        )

    def stage_simulate(self) -> str:
        """Three runs on the read-back tables. Shares: every class saturating, so each link's
        arbiter divides it as planned. Latency: high-priority classes offer 80% of their
        planned share (a latency class that saturates measures only its own backlog), the
        low-priority classes still saturate. Probe: the high-priority classes at 5% of their
        share, so their packets rarely queue behind each other, as the end-to-end bound
        assumes; the others still saturate."""

        plan = self.plan
        params = SimParams(
            rate=plan.fabric.rate_gbps,
            mtu=plan.fabric.mtu,
            accounting=plan.accounting,
            voq=self.cfg.voq,
            seed=self.cfg.seed,
            time_us=self.cfg.sim_time_us,
            warmup_us=self.cfg.sim_warmup_us,
            # the wire and switch figures the end-to-end bound assumes (policy fabric.*)
            prop_ns=plan.fabric.max_cable_m * NS_PER_M,
            switch_ns=plan.fabric.switch_latency_ns,
        )
        saturating = classes_from_plan(plan, msg_bytes=plan.fabric.mtu, rate="saturate", pattern=self.cfg.traffic)

        def paced(fraction: float) -> list:
            return [
                c.model_copy(update={"rate": round(fraction * plan.class_by_name(c.name).bandwidth.planned / 100, 5)})
                if plan.class_by_name(c.name).priority == "high"
                else c
                for c in saturating
            ]

        # compiled once for the four runs (2 s at 2550 CAs, 4x that at 10,000)
        net = compile_network(self.fabric, rate_gbps=params.rate_gbps, source=str(self.cfg.out / "fabric.json"))
        if net.lmc:  # what the verdict rests on, beside verify's LMC warning
            self.s.notes.append(base_lid_note(net.lmc))
        runs = {}
        mixes = (("shares", saturating), ("latency", paced(0.8)), ("probe", paced(PROBE_FRACTION)))
        for i, (name, classes) in enumerate(mixes):
            traffic = TrafficSpec(pattern=self.cfg.traffic, msg_bytes=plan.fabric.mtu, classes=classes)

            def run_progress(f: float, i: int = i) -> None:
                self.progress("simulate", (i + f) / 4)

            runs[name] = simulate(net, traffic, params, load=1.0, progress=run_progress)
        self.s.sim, self.s.sim_latency, self.s.sim_probe = runs["shares"], runs["latency"], runs["probe"]
        # The classes' shares of one link where every class stays backlogged (an incast onto
        # one CA), batch by batch until the 95 % interval is known to 0.02 pp: what the plan
        # promises per link, without the all-to-all run's back-pressure drift.
        self.s.link_shares = measure_link_shares(net, saturating, params.model_copy(update={"warmup_us": 100.0}))
        self.progress("simulate", 1.0)
        doc = {k: r.to_json() for k, r in runs.items()} | {"link_shares": self.s.link_shares.to_json()}
        write_json(self.cfg.out / "simulation.json", doc)
        ls = self.s.link_shares
        return (
            f"{self.cfg.traffic} traffic, 3 runs × {self.cfg.sim_time_us:g} µs; link shares into "
            f"{ls.destination}: {ls.simulated_us:g} µs, ±{max(ls.half_width_pp.values()):.3f} pp (95 %)"
        )

    def stage_judge(self) -> str:

        # the end-to-end bound on each class's longest route as routed (the verifier's hops)
        hops = {n: max(r.hops) for n, r in self.s.verify_by_class.items() if r.hops}
        self.s.verdicts = judge_classes(
            self.plan,
            produced(self.s.link_shares, "the link shares (stage simulate)").shares,
            self.s.sim_latency,
            hops,
            sim_probe=self.s.sim_probe,
        )
        for v in self.s.verdicts:
            if v.e2e_bound_us is None or v.sim_p99_us is None or v.priority != "high":
                continue
            if v.sim_p99_us > v.e2e_bound_us:
                self.s.notes.append(
                    f"{v.name}: simulated p99 at 80 % of its share {v.sim_p99_us:.2f} µs is above the "
                    f"end-to-end bound {v.e2e_bound_us:.2f} µs: its packets, from many sources to one "
                    "destination, queue behind each other, which the bound does not cover (docs/policy.md)"
                )
        return f"{sum(v.ok for v in self.s.verdicts)}/{len(self.s.verdicts)} SLAs met"

    # ---- verdict (ibqos_app.dryrun.verdict) -----------------------------------------
    def fabric_checks(self) -> list[dict]:
        return fabric_checks(self.s)

    @property
    def ok(self) -> bool:
        return passed(self.s)
