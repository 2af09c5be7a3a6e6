"""The run plan: every perftest process of a hardware validation run, as data.

Phases run one after another; the flows of a phase run at the same time:
1. `bw`: one ib_send_bw server/client pair per SL of the plan, all at once for `duration` s
   (seed 002 section 4: one saturating flow per SL between two nodes behind one switch);
2. `lat-idle-slN`: ib_send_lat on SL N alone;
3. `lat-loaded-slN`: ib_send_lat on SL N while every other SL runs its bandwidth flow.
Latency uses -n ITERATIONS, not -D: only then does perftest print the full table
(t_min ... 99.9% percentile). Every pair has its own TCP port (-p) so flows can overlap.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Annotated, Literal

from ibqos.arbiter.rates import rate_gbps
from ibqos.docfile import DOCUMENT, SMALL_DOC_LIMIT, read_json_text, validate, write_atomic, write_dir_atomic
from ibqos.templating import render
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from .planinput import PlanSummary

SCHEMA: Literal["ibqos.testbed-run/1"] = "ibqos.testbed-run/1"
LISTING_TEMPLATE = "perftest-plan.j2"


# A node as ssh's destination takes it (name, address, user@name; IPv6 as ::1 or [::1]) and
# perftest its server's address: an argument starting with '-' is read by either as an option
# (`-oProxyCommand=...` had ssh run a command on this machine), an empty or spaced one fails.
_HOST_RE = re.compile(r"(?:[A-Za-z0-9_][A-Za-z0-9_.-]*@)?[A-Za-z0-9_:\[][A-Za-z0-9_.:%\[\]-]*")
# An HCA as perftest -d takes it (mlx5_0, ibp1s0, rxe0)
_DEVICE_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
# A phase names a directory of the results and a flow its files (results/<phase>/<flow>.*):
# one path component, so a hand-edited `../x` or `/x` writes nowhere outside them
_NAME_RE = _DEVICE_RE


def address_of(host: str) -> str:
    """What perftest's client connects to for the ssh destination `host`: its name or address
    without ssh's `user@` and brackets (getaddrinfo resolves neither: every client flow of
    `--server admin@node1` failed to reach 'admin@node1')."""
    return host.rpartition("@")[2].removeprefix("[").removesuffix("]")


def _host(v: str) -> str:
    if not _HOST_RE.fullmatch(v):
        raise ValueError(f"{v!r} is not a node ssh can reach: a name, user@name or address, not starting with '-'")
    return v


def _device(v: str) -> str:
    if not _DEVICE_RE.fullmatch(v):
        raise ValueError(f"{v!r} is not an HCA name perftest -d takes (such as mlx5_0), not starting with '-'")
    return v


def _name(v: str) -> str:
    if not _NAME_RE.fullmatch(v):
        raise ValueError(
            f"{v!r} names a directory or file of the results: letters, digits, '_', '.', '-', "
            "not starting with '.' or '-'"
        )
    return v


def _gbps(v: float) -> float:
    """A link's data rate as every ibqos input reads one (arbiter.rates): 0 or less is no
    rate, where `compare` read 0 as 'do not check the bandwidths against the link' and a
    negative one as a link no measurement fits."""
    rate_gbps(v)
    return v


Host = Annotated[str, AfterValidator(_host)]
Device = Annotated[str, AfterValidator(_device)]
Name = Annotated[str, AfterValidator(_name)]


class _Model(BaseModel):
    # a run plan is edited by hand before a run: strict (docfile.DOCUMENT), so a typed `"sl": "3"`
    # or `"duration": 10.5` is refused, not coerced
    model_config = ConfigDict(**DOCUMENT, populate_by_name=True)


class Process(_Model):
    host: Host
    argv: list[str] = Field(min_length=1)
    timeout: float = Field(gt=0, description="seconds; the process is killed after this")


class Flow(_Model):
    id: Name
    kind: Literal["bw", "lat"]
    sl: int = Field(ge=0, le=15)
    class_name: str
    tcp_port: int = Field(ge=1, le=65535)
    start_delay: float = Field(0.0, ge=0, description="seconds after the phase's servers listen")
    server: Process
    client: Process


class Phase(_Model):
    name: Name
    description: str
    flows: list[Flow] = Field(min_length=1)


class ClassInfo(_Model):
    name: str
    sls: list[Annotated[int, Field(ge=0, le=15)]]
    priority: str
    predicted_share: float | None


class Settings(_Model):
    server: Host
    client: Host
    server_addr: Host = Field(description="name or address the client uses to reach the server")
    device: Device
    ib_port: int = Field(ge=1)
    duration: int = Field(ge=1)
    size: int = Field(ge=1)
    lat_size: int = Field(ge=1)
    lat_iters: int = Field(ge=5)
    base_port: int = Field(ge=1, le=65535 - 32)
    report_gbits: bool = False
    slack: float = Field(30.0, gt=0, description="seconds allowed beyond the measurement")


class RunPlan(_Model):
    schema_: Literal["ibqos.testbed-run/1"] = Field(SCHEMA, alias="schema")
    plan_path: str
    plan_sha256: str
    rate: str
    # None: no rate known (a run plan written without the plan's), so no bandwidth is checked
    # against the link; `ibqos testbed plan` always writes the plan's
    rate_gbps: Annotated[float, AfterValidator(_gbps)] | None
    mtu: int
    settings: Settings
    classes: list[ClassInfo]
    share_tolerance_pp: float = 2.0  # from the plan: the verdict's tolerance
    phases: list[Phase]

    @model_validator(mode="after")
    def _one_recording_each(self) -> RunPlan:
        """Each phase and each flow of a phase once (their recordings share a path), and a
        bandwidth flow for every SL of the classes (a share is of all of them): a hand-edited
        run plan short of one met a KeyError in the report (internal error, exit 70)."""
        phases: set[str] = set()
        for phase in self.phases:
            if phase.name in phases:
                raise ValueError(f"phase {phase.name!r} twice: its recordings would overwrite each other")
            phases.add(phase.name)
            ids = [f.id for f in phase.flows]
            if dup := next((i for i in ids if ids.count(i) > 1), None):
                raise ValueError(
                    f"flow {dup!r} twice in phase {phase.name!r}: its recordings would overwrite each other"
                )
        bw = {f.id for phase in self.phases if phase.name == "bw" for f in phase.flows if f.kind == "bw"}
        for c in self.classes:
            if (missing := next((sl for sl in c.sls if f"bw-sl{sl}" not in bw), None)) is not None:
                raise ValueError(
                    f"class {c.name!r} has SL {missing}, and phase 'bw' no flow bw-sl{missing} to measure it"
                )
        return self

    @property
    def bw_unit(self) -> str:
        return "Gb/sec" if self.settings.report_gbits else "MB/sec"

    def flows(self):
        for phase in self.phases:
            for flow in phase.flows:
                yield phase, flow

    def save(self, path: Path) -> None:
        write_atomic(path, self.json_text())

    def json_text(self) -> str:
        return json.dumps(self.model_dump(mode="json", by_alias=True), indent=2) + "\n"

    @classmethod
    def load(cls, path: str | Path) -> RunPlan:
        path = Path(path)
        doc, text = read_json_text(path, limit=SMALL_DOC_LIMIT, what="a run plan")
        return validate(cls, doc, path, text=text)


def build(plan: PlanSummary, s: Settings) -> RunPlan:
    sls = [(c.name, sl) for c in plan.classes for sl in c.sls]
    settle = min(2.0, s.duration / 4)

    def bw_flow(cls_name: str, sl: int) -> Flow:
        args = _common("ib_send_bw", s, plan.mtu, sl, s.base_port + sl)
        args += ["-s", str(s.size), "-D", str(s.duration)]
        args += ["--report_gbits"] if s.report_gbits else []
        t = s.duration + s.slack
        return Flow(
            id=f"bw-sl{sl}",
            kind="bw",
            sl=sl,
            class_name=cls_name,
            tcp_port=s.base_port + sl,
            server=Process(host=s.server, argv=args, timeout=t),
            client=Process(host=s.client, argv=args + [s.server_addr], timeout=t),
        )

    def lat_flow(cls_name: str, sl: int, load: str, delay: float) -> Flow:
        args = _common("ib_send_lat", s, plan.mtu, sl, s.base_port + 16 + sl)
        args += ["-s", str(s.lat_size), "-n", str(s.lat_iters)]
        return Flow(
            id=f"lat-{load}-sl{sl}",
            kind="lat",
            sl=sl,
            class_name=cls_name,
            tcp_port=s.base_port + 16 + sl,
            start_delay=delay,
            server=Process(host=s.server, argv=args, timeout=s.slack + delay),
            client=Process(host=s.client, argv=args + [s.server_addr], timeout=s.slack),
        )

    phases = [
        Phase(
            name="bw",
            description=f"bandwidth: all {len(sls)} SLs at once for {s.duration} s",
            flows=[bw_flow(c, sl) for c, sl in sls],
        )
    ]
    phases += [
        Phase(
            name=f"lat-idle-sl{sl}",
            description=f"latency of SL {sl} on an idle fabric",
            flows=[lat_flow(c, sl, "idle", 0.0)],
        )
        for c, sl in sls
    ]
    if len(sls) > 1:
        phases += [
            Phase(
                name=f"lat-loaded-sl{sl}",
                description=f"latency of SL {sl} under the bandwidth load of the other "
                f"SLs (starts {settle:g} s into their {s.duration} s run)",
                flows=[bw_flow(oc, osl) for oc, osl in sls if osl != sl] + [lat_flow(c, sl, "loaded", settle)],
            )
            for c, sl in sls
        ]
    return RunPlan(
        plan_path=plan.path,
        plan_sha256=plan.sha256,
        rate=plan.rate,
        rate_gbps=plan.rate_gbps,
        mtu=plan.mtu,
        settings=s,
        share_tolerance_pp=plan.share_tolerance_pp,
        classes=[
            ClassInfo(name=c.name, sls=list(c.sls), priority=c.priority, predicted_share=c.predicted_share)
            for c in plan.classes
        ],
        phases=phases,
    )


def _common(tool: str, s: Settings, mtu: int, sl: int, tcp_port: int) -> list[str]:
    # -F: perftest refuses to report when it cannot read the CPU clock rate (frequency
    # scaling, some VMs) unless told not to check; the measurement does not depend on it.
    # -m: the plan's MTU, so packets are as large as the arbitration tables assume.
    return [tool, "-d", s.device, "-i", str(s.ib_port), "-S", str(sl), "-p", str(tcp_port), "-m", str(mtu), "-F"]


def listing(run: RunPlan) -> str:
    """The commands an admin would type, phase by phase (templates/perftest-plan.j2)."""
    return render(LISTING_TEMPLATE, run=run, sh=shlex.join)


def write(run: RunPlan, out_dir: Path) -> tuple[Path, Path]:
    text = listing(run)  # render first: nothing is written if it fails
    # the two files as one set: two runs at once leave one's pair, never a mix
    write_dir_atomic(out_dir, {"runplan.json": run.json_text(), "runplan.txt": text})
    return out_dir / "runplan.json", out_dir / "runplan.txt"
