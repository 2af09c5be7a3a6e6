"""`ibqos plan POLICY -o PLAN`: synthesize VLArb tables and the SL map from a policy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click
from ibqos.arbiter.table import MAX_CAP
from ibqos.errors import InputError
from ibqos.outpath import OUT_FILE, same_file
from ibqos.planner import plan_and_analyze
from ibqos.term import console, literal, print_table
from rich.table import Table

if TYPE_CHECKING:
    from ibqos.plan import Plan


def parse_cap(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    parts = text.split("/")
    try:
        nums = [int(p) for p in parts]
    except ValueError:
        nums = []
    if len(nums) not in (1, 2) or not all(1 <= n <= MAX_CAP for n in nums):
        raise InputError(f"--cap {text!r}: give HIGH/LOW or N, entries 1..{MAX_CAP}", field="--cap")
    return (nums[0], nums[-1])


@click.command()
@click.argument("policy", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    "out",
    required=True,
    type=OUT_FILE,
    help="Plan file to write (JSON).",
)
@click.option(
    "--cap",
    metavar="HIGH/LOW",
    help="Plan for this VLArb capacity instead of the policy's fabric.vlarb_cap (Debian ibsim ports report 8/8).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the per-class analysis as JSON.")
def plan(policy: Path, out: Path, cap: str | None, as_json: bool) -> None:
    """Synthesize VLArb tables, VLHighLimit and the SL->class->VL plan from POLICY."""

    if not out.name or out.is_dir():  # -o '' is the current directory
        raise InputError("is a directory, not a plan file to write", file=out, field="--output")
    if not out.parent.is_dir():
        what = "is not a directory" if out.parent.exists() else "the output directory does not exist"
        raise InputError(what, file=out.parent, field="--output")
    result = plan_and_analyze(policy, parse_cap(cap))
    if result.partitions is not None and same_file(out, result.partitions.file):
        # an input click does not see: the plan carries the text, the admin's file would be gone
        raise InputError(
            f"is also the partitions file POLICY names ({result.partitions.file}): writing it would replace it",
            file=out,
            field="--output",
        )
    result.save(out)
    if as_json:
        click.echo(json.dumps(result.analysis["terminal"]["per_class"], indent=1))
        return
    _summary(result, out)


def _summary(p: Plan, out: Path) -> None:
    t = Table(
        title=literal(
            f"{out}: per class on switch ports facing CAs (terminal), exact analysis, "
            f"{p.accounting} accounting, {p.fabric.mtu}-byte packets at {p.fabric.rate}"
        )
    )
    for col in ("class", "prio", "SLs", "VLs", "requested %", "planned %", "max dist", "worst wait µs", "meets"):
        t.add_column(col, justify="right" if col not in ("class", "prio") else "left")
    an = p.analysis["terminal"]["per_class"]
    for c in p.classes:
        a = an[c.name]
        req = c.bandwidth.requested
        t.add_row(
            c.name + (" (default)" if c.default else ""),
            c.priority,
            ",".join(map(str, c.sls)),
            ",".join(map(str, c.vls)),
            req if req == "rest" else f"{req:g}",
            f"{a['share']:.2f}",
            str(a["max_distance"]),
            f"{a['worst_wait_us']:.2f}" if a["worst_wait_us"] is not None else "-",
            "yes" if a["meets_bandwidth"] and a["meets_latency"] else "NO",
        )
    print_table(console(), t)
    term = p.vlarb.terminal
    click.echo(f"terminal: high {len(term.high)} entries, low {len(term.low)} entries, VLHighLimit {term.limit}")
    for line in e2e_lines(p):
        click.echo(line)
    budget = vl_budget(p)
    if budget:
        click.echo(budget)
    for note in p.notes:
        click.echo(f"note: {note}")


def e2e_lines(p: Plan) -> list[str]:
    """The end-to-end bound per class, one line each, after a line that says what it sums."""
    e2e = p.end_to_end
    if e2e is None:
        return [
            f"end-to-end bound: not computed (routing {p.fabric.routing}: set fabric.max_switch_hops "
            "to the switch-to-switch links of the longest route)"
        ]
    first = next(iter(e2e.per_class.values()))
    out = [
        f"end to end, route {' → '.join(first['ports'])} ({e2e.switch_hops} switch hops):",
        f"  waits + {first['serialization_us']:.2f} µs sending + {first['wire_us']:.2f} µs cable "
        f"({p.fabric.max_cable_m:g} m) + {first['switch_us']:.2f} µs switches ({p.fabric.switch_latency_ns:g} ns);",
        "  not covered: queueing behind the class's own packets, credit stalls",
    ]
    for c in p.classes:
        d = e2e.per_class[c.name]
        bound = "unbounded" if d["bound_us"] is None else f"{d['bound_us']:.2f} µs"
        want = c.latency.max_e2e_latency_us
        waits = "" if d["wait_us"] is None else f" (waits {d['wait_us']:.2f} µs)"
        meets = f", max_e2e_latency_us {want:g}: {'yes' if d['meets'] else 'NO'}" if want is not None else ""
        out.append(f"  {c.name}: {bound}{waits}{meets}")
    return out


def vl_budget(p: Plan) -> str:
    """One line: how many classes the data VLs hold without and with dla's fault reservation."""
    fit = p.fabric.classes_fit
    if "links" not in fit:
        return ""
    mode = (
        "reserved (fault_tolerance: links)"
        if p.fabric.fault_tolerance == "links"
        else "not reserved (fault_tolerance: none)"
    )
    return (
        f"VL budget: {p.fabric.data_vls} data VLs hold {fit['none']} classes at 2 VLs each, "
        f"{fit['links']} at 3 VLs each with the fault VL; fault VL {mode}, "
        f"{len(p.classes)} classes planned"
    )
