"""The verifier's verdict: what `ibqos verify` prints and what `--json` writes."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..findings import Finding

SCHEMA = "ibqos.verify/1"


@dataclass
class LostRoute:
    src: str  # CA node description (":port" on multi-port CAs)
    dst: str
    status: str  # no_route, dead_port, wrong_ca, loop, dropped
    detail: str


@dataclass
class VerifyReport:
    source: str
    switches: int
    ca_ports: int
    pairs: int
    delivered: int
    sl_source: str  # "SL 0 for every pair" / "path records: FILE"
    lost: dict[str, int] = field(default_factory=dict)
    lost_examples: list[LostRoute] = field(default_factory=list)
    hops: dict[int, int] = field(default_factory=dict)  # switch-to-switch links -> pairs
    stretch: dict[int, int] = field(default_factory=dict)  # links beyond the shortest -> pairs
    sls_used: list[int] = field(default_factory=list)
    vls_used: list[int] = field(default_factory=list)
    channels: int = 0  # switch-to-switch channels (link, VL) in use
    dependencies: int = 0
    cdg_acyclic: bool = True
    cycle: list[str] = field(default_factory=list)  # "switch:port/vl", each depends on the next
    cycle_routes: list[str] = field(default_factory=list)  # a route creating each dependency
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def unreachable(self) -> int:
        return sum(n for k, n in self.lost.items() if k != "loop")

    @property
    def loops(self) -> int:
        return self.lost.get("loop", 0)

    @property
    def cdg_state(self) -> str:
        """acyclic, cycle, or incomplete: with routing loops the graph lacks the looping
        routes' channels (a looping packet never releases them), so "acyclic" would prove
        nothing there; a cycle found among the delivered routes is still a cycle."""
        if not self.cdg_acyclic:
            return "cycle"
        return "incomplete" if self.loops else "acyclic"

    @property
    def nonminimal(self) -> int:
        """Delivered pairs routed over more switch links than the cabling requires."""
        return sum(n for k, n in self.stretch.items() if k > 0)

    @property
    def ok(self) -> bool:
        return not self.lost and self.cdg_acyclic

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["hops"] = {str(k): v for k, v in sorted(self.hops.items())}
        d["stretch"] = {str(k): v for k, v in sorted(self.stretch.items())}
        return {
            "schema": SCHEMA,
            "ok": self.ok,
            "unreachable": self.unreachable,
            "loops": self.loops,
            "nonminimal": self.nonminimal,
            "cdg": self.cdg_state,
            "findings": [f.to_json() for f in self.findings()],
            **d,
        }

    def findings(self) -> list[Finding]:
        """The verifier's defects, one per kind. The routing-loop finding is the one check of
        LID loops in the LFTs: verify, status and the dry run all report it from here."""
        out = []
        if self.unreachable:
            out.append(Finding("unreachable", f"{self.unreachable} unreachable pairs", {"pairs": self.unreachable}))
        if self.loops:
            example = next((r for r in self.lost_examples if r.status == "loop"), None)
            out.append(
                Finding(
                    "routing-loop",
                    f"{self.loops} pairs in routing loops"
                    + (f" (e.g. {example.src} -> {example.dst}: {example.detail})" if example else ""),
                    {"pairs": self.loops},
                )
            )
        if not self.cdg_acyclic:
            out.append(
                Finding(
                    "credit-loop",
                    "credit loop: the channel dependency graph has a cycle",
                    {"cycle": list(self.cycle)},
                )
            )
        return out

    def defects(self) -> list[str]:
        return [f.message for f in self.findings()]

    def cdg_text(self) -> str:
        """The CDG verdict in words; never "acyclic" beside a routing loop."""
        if self.cdg_state == "incomplete":
            return (
                f"not meaningful: {self.loops} pairs loop in the LFTs, so the graph lacks their "
                "channels (a routing loop is a defect of its own); no cycle among the delivered routes"
            )
        if self.cdg_state == "acyclic":
            return "acyclic"
        return (
            ("incomplete (routing loops), and " if self.loops else "")
            + f"CYCLE of {len(self.cycle)} channels (switch:port/VL, each waiting for "
            "the next; a route that makes it wait):"
        )

    def text(self) -> str:
        lines = [
            f"fabric: {self.source}: {self.switches} switches, {self.ca_ports} CA ports, {self.pairs} CA→CA pairs",
            f"service levels: {self.sl_source}; SLs used {_ints(self.sls_used)}, VLs used {_ints(self.vls_used)}",
            f"delivered: {self.delivered}/{self.pairs}",
        ]
        for status, n in sorted(self.lost.items()):
            lines.append(f"  {status}: {n} pairs")
        for r in self.lost_examples:
            lines.append(f"    {r.src} -> {r.dst}: {r.status}: {r.detail}")
        if self.hops:
            total = sum(self.hops.values())
            lines.append("switch-to-switch hops (pairs):")
            for h, n in sorted(self.hops.items()):
                lines.append(f"  {h:3d} {n:10d} {100.0 * n / total:6.2f}%")
        if self.delivered:
            longest = max(self.stretch, default=0)
            lines.append(
                f"minimal routes: {self.delivered - self.nonminimal}/{self.delivered}"
                + (
                    f" ({self.nonminimal} longer than the cabling requires, by up to {longest} links)"
                    if self.nonminimal
                    else ""
                )
            )
        lines.append(
            f"channel dependency graph: {self.channels} channels, {self.dependencies} dependencies, " + self.cdg_text()
        )
        width = max(map(len, self.cycle), default=0)
        for k, c in enumerate(self.cycle):
            nxt = self.cycle[(k + 1) % len(self.cycle)]
            why = self.cycle_routes[k] if k < len(self.cycle_routes) else ""
            lines.append(f"  {c:<{width}} -> {nxt:<{width}}  {why}".rstrip())
        for w in self.warnings:
            lines.append(f"warning: {w}")
        verdict = "; ".join(self.defects()) or "no unreachable pairs, no routing loops, no credit loops"
        lines.append(f"verdict: {'OK' if self.ok else 'DEFECT'}: {verdict}")
        return "\n".join(lines)


def _ints(xs: list[int]) -> str:
    return ",".join(map(str, xs)) or "-"
