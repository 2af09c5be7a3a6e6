"""VLArb overlays: tables put on a fabric model's ports where nothing was read back (OpenSM
dumps carry no VLArb), as an explicit, labelled step. Each overlay returns what it did, so
the caller can say in its result which ports' VLArb came from elsewhere than the fabric.

- `overlay_plan_vlarb`: the plan's table for the port's role (ca, terminal, local, global)
  or its per-port override, as `ibqos simulate RUNDIR` does for a dump-only run.
- `overlay_round_robin_vlarb`: one entry of weight 1 per data VL (equal shares), the bench's
  stand-in on dumps when there is no plan.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ibqos.arbiter import ArbTable
from ibqos.conformance import opensm_roles
from ibqos.fabric.groups import NotADragonfly, port_roles
from ibqos.fabric.model import Fabric
from ibqos.plan import Plan


@dataclass
class VlarbOverlay:
    source: str  # "plan <path>" or "round robin"
    ports: list[tuple[int, int, str]] = field(default_factory=list)  # (node GUID, port, role)

    def names(self, fabric: Fabric) -> list[str]:
        """`node:port (role)` of every port the overlay gave a table."""
        return [f"{fabric.nodes[g].desc or f'0x{g:016x}'}:{p} ({role})" for g, p, role in self.ports]

    def note(self) -> str:
        return f"VLArb of {len(self.ports)} ports from the {self.source}, not read back from the fabric"

    def to_json(self, fabric: Fabric) -> dict[str, object]:
        return {"source": self.source, "count": len(self.ports), "ports": self.names(fabric)}


def overlay_plan_vlarb(fabric: Fabric, plan: Plan, plan_name: str = "plan") -> VlarbOverlay:
    """Give every linked port that has no VLArb the plan's table for its role, or its
    per-port override, with the plan's capacities; ports without a role are left alone.
    The roles are those the tables were programmed by: dla's dragonfly roles, else
    (another engine, or a fabric dla refused and its fallback routed) OpenSM's own port
    types, as the conformance check reads them."""
    try:
        roles = port_roles(fabric) if plan.fabric.routing == "dla" else opensm_roles(fabric)
    except NotADragonfly:
        roles = opensm_roles(fabric)
    overrides = {(int(o.guid, 16), o.port): o.table for o in plan.vlarb.ports}
    out = VlarbOverlay(f"plan {plan_name}")
    for n in fabric.nodes.values():
        for p in n.ports.values():
            if p.vlarb is not None or not p.remote or (n.guid, p.num) not in roles:
                continue
            role = roles[(n.guid, p.num)]
            t = overrides.get((n.guid, p.num)) or plan.vlarb.role(role)
            p.vlarb = dataclasses.replace(t, high_cap=plan.fabric.high_cap, low_cap=plan.fabric.low_cap)
            if not p.op_vls:
                p.op_vls = plan.fabric.data_vls
            out.ports.append((n.guid, p.num, "override" if (n.guid, p.num) in overrides else role))
    return out


def overlay_round_robin_vlarb(fabric: Fabric) -> VlarbOverlay:
    """Give every linked port without VLArb one high-table entry of weight 1 per data VL."""
    used = [v for n in fabric.nodes.values() for row in n.sl2vl.values() for v in row if v < 15]
    default_vls = max(used, default=0) + 1
    out = VlarbOverlay("round robin")
    for n in fabric.nodes.values():
        for p in n.ports.values():
            if p.vlarb is None and p.remote and p.num > 0:
                vls = p.op_vls or default_vls
                p.vlarb = ArbTable([(v, 1) for v in range(vls)], [], 255, 8, 8)
                out.ports.append((n.guid, p.num, "any"))
    return out
