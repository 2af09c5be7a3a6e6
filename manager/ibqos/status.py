"""What the fabric is programmed with now, summarised per port role and per SL."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from .arbiter import ArbTable
from .fabric.groups import NotADragonfly, port_roles, port_types
from .fabric.model import Fabric
from .roles import ROLES


@dataclass
class RoleTables:
    role: str
    ports: int
    high: str
    low: str
    high_limit: int | None


def _roles(fabric: Fabric) -> dict[tuple[int, int], str]:
    try:
        return port_roles(fabric)
    except NotADragonfly:
        return port_types(fabric)  # no dragonfly roles: OpenSM's own port types


def vlarb_by_role(fabric: Fabric) -> list[RoleTables]:
    """Distinct (high, low, limit) per role, with how many ports carry each."""
    roles = _roles(fabric)
    seen: dict[str, Counter[tuple[str, str, int | None]]] = defaultdict(Counter)
    for n in fabric.nodes.values():
        for p, port in n.ports.items():
            role = roles.get((n.guid, p))
            if role is None:
                continue
            a = port.vlarb
            key = (
                (ArbTable.format_served(a.high), ArbTable.format_served(a.low), a.limit)
                if a
                else ("(not read)", "", None)
            )
            seen[role][key] += 1
    out = []
    for role in (*ROLES, "switch"):
        for (high, low, lim), count in seen.get(role, Counter()).most_common():
            out.append(RoleTables(role, count, high, low, lim))
    return out


def sl2vl_by_hop(fabric: Fabric) -> dict[str, Counter[str]]:
    """Per hop kind (e.g. 'ca', 'global→local'), how often each 16-SL VL map is programmed."""
    roles = _roles(fabric)
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for n in fabric.nodes.values():
        for (i, o), vls in n.sl2vl.items():
            if n.kind == "ca":
                kind = "ca"
            else:
                if i == 0 or o in (0, i):
                    continue
                kind = f"{roles.get((n.guid, i), '?')}→{roles.get((n.guid, o), '?')}"
            out[kind]["".join(f"{v:x}" for v in vls)] += 1
    return dict(out)
