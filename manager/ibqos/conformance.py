"""Is the fabric programmed as planned? Port by port: SL2VL, VLArb high/low, VLHighLimit, and
the MTU every link runs (`mtu_findings`).

Expected state (the `dla` contract, seed 003 Fig. 8 generalised to classes):
- SL s belongs to class c = sl2class[s]; class c owns VLs vls[c] = (2c, 2c+1) under dla,
  (3c, 3c+1, 3c+2) under dla with fault_tolerance links, (c,) under OpenSM's own engines.
- CA and router ports: SL s → vls[c][0].
- Switches, per (in, out): vls[c][1] when `in` is a global port and `out` a local port (dla),
  and on a dragonfly+ spine when both are local (up from a leaf, down to a leaf), else
  vls[c][0]; on a dragonfly+ leaf a turn between two spines takes the level of the routes
  through it (arriving ones 1, leaving ones 0: plugin/README.md), so either VL of the class
  is accepted there. The third VL of a class (fault_tolerance links) is dla's detour VL: it
  appears only around a fault, on whatever (in, out) pairs the detour crosses, so it is
  accepted on any switch pair. On a fabric known to be degraded (`degraded=True`) dla gives
  each turn the level its routes need (plugin/README.md, "VL levels"), so any VL of the
  class is accepted there; the verifier, not this comparison, proves the result
  deadlock-free.
- VLArb per port role (ca, sw0, terminal, local, global), a per-port override winning.
Roles follow the groups dla routed with, from its record when there is one, cross-checked
against the checker's own discovery (ibqos.fabric.groups_in_force, docs/groups.md): a record
that breaks the spec is one `groups:` line, not a difference on every port.
Without dla there are no dragonfly roles: OpenSM programs every switch external port with
its qos_swe_* tables, which ibqos renders from the terminal role.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .arbiter import ArbTable
from .fabric.dla_record import DlaRecord
from .fabric.groups import port_roles, port_types, switch_roles
from .fabric.groups_in_force import GroupsInForce, groups_in_force
from .fabric.model import Fabric, Node, Port
from .plan import Plan
from .roles import ROLES
from .vls import vlcap_code

MAX_LINES_PER_KIND = 20
VlsOf = Callable[[int], tuple[int, ...]]  # class index -> its VLs


@dataclass
class Expected:
    sl2class: list[int]
    roles: dict[str, ArbTable]  # role → tables (a role may be absent)
    ports: dict[tuple[int, int], ArbTable]  # (switch GUID, port) → override
    class_vls: list[tuple[int, ...]] | None = None  # class index → its VLs; None: (2c, 2c+1)
    dragonfly: bool = True  # dla's roles; else OpenSM's port types

    def vls_of(self, c: int) -> tuple[int, ...]:
        return self.class_vls[c] if self.class_vls else (2 * c, 2 * c + 1)


def expected_from_plan(plan: Plan) -> Expected:
    """The plan as expected programmed state."""
    roles: dict[str, ArbTable] = {r: plan.vlarb.role(r) for r in ROLES}
    ports = {(int(o.guid, 16), o.port): o.table for o in plan.vlarb.ports}
    class_vls = [tuple(c.vls) for c in sorted(plan.classes, key=lambda c: c.index)]
    return Expected(list(plan.sl2class), roles, ports, class_vls, dragonfly=plan.fabric.routing == "dla")


def expected_sl2vl(
    sl2class: list[int],
    in_role: str | None,
    out_role: str | None,
    vls_of: VlsOf = lambda c: (2 * c, 2 * c + 1),
    switch_role: str = "member",
) -> tuple[int, ...]:
    shifted = out_role == "local" and (in_role == "global" or (switch_role == "spine" and in_role == "local"))
    out = []
    for c in sl2class:
        vls = vls_of(c)
        out.append(vls[1] if shifted and len(vls) > 1 else vls[0])
    return tuple(out)


def detour_ok(
    got: tuple[int, ...], want: tuple[int, ...], sl2class: list[int], vls_of: VlsOf, degraded: bool = False
) -> bool:
    """Every SL either on its planned VL or on its class's detour VL (the third, if any); on a
    degraded fabric, on any VL of its class."""
    return all(
        g == w or (len(vls_of(c)) > 2 and g == vls_of(c)[2]) or (degraded and g in vls_of(c))
        for g, w, c in zip(got, want, sl2class, strict=False)
    )


def opensm_roles(fabric: Fabric) -> dict[tuple[int, int], str]:
    """OpenSM's own port types, named by the plan's roles: every switch external port gets the
    qos_swe_* tables, which ibqos renders from the terminal role."""
    return {k: "terminal" if t == "switch" else t for k, t in port_types(fabric).items()}


def _name(n: Node, port: int) -> str:
    return f"{n.desc or hex(n.guid)}:{port}"


def _table_matches(programmed: tuple[tuple[int, int], ...], planned: tuple[tuple[int, int], ...]) -> bool:
    """Equal entries in order; the port's remaining capacity must hold only skipped entries."""
    k = len(planned)
    return len(programmed) >= k and programmed[:k] == planned and all(w == 0 for _, w in programmed[k:])


# PLR0912: one branch per table kind and port kind
def diff_programmed(  # noqa: PLR0912
    fabric: Fabric,
    expected: Expected,
    groups: dict[int, int] | GroupsInForce | None = None,
    degraded: bool = False,
    record: DlaRecord | None = None,
) -> list[str]:
    """One line per port that differs from the plan; empty when the fabric is as planned.
    The dragonfly roles follow `groups`: the groups in force (groups_in_force), or switch
    GUID → group when they are known otherwise (from before a fault); by default those of
    dla's `record`, else the checker's own. `degraded` when links or switches are down (dla's
    VL levels then move within each class)."""
    broken = None
    if expected.dragonfly and groups is None:
        groups = groups_in_force(fabric, record)
    if isinstance(groups, GroupsInForce):
        degraded, broken = degraded or groups.degraded, groups.broken
        groups = groups.groups
    roles = port_roles(fabric, groups) if expected.dragonfly else opensm_roles(fabric)
    sw_roles = switch_roles(fabric, groups) if expected.dragonfly and groups is not None else {}
    vls_of = expected.vls_of
    # SL2VL wanted per (in role, out role, switch role): a few keys for ~10^6 port pairs at 10k CAs
    wants: dict[tuple[str | None, str | None, str], tuple[int, ...]] = {}
    out: dict[str, list[str]] = {"sl2vl": [], "vlarb": [], "missing": []}
    for n in sorted(fabric.nodes.values(), key=lambda n: n.guid):
        present = sorted(n.ports)
        if n.kind != "switch":  # a CA's or router's port: dla's SL2VL hook gives it level 0
            for p in present:
                want = expected_sl2vl(expected.sl2class, None, None, vls_of)
                got = n.sl2vl.get((0, p))
                if got is None:
                    out["missing"].append(f"{_name(n, p)}: no SL2VL read back")
                elif got != want:
                    out["sl2vl"].append(f"{_name(n, p)} ({n.kind}) SL2VL {_vl(got)} planned {_vl(want)}")
        else:
            ext = [p for p in present if p != 0]
            peer = {p: (n.ports[p].remote or (None,))[0] for p in ext}
            for i in ext:
                for o in ext:
                    if i == o:
                        continue
                    sw_role = sw_roles.get(n.guid, "member")
                    ri, ro = roles.get((n.guid, i)), roles.get((n.guid, o))
                    key = (ri, ro, sw_role)
                    if key not in wants:
                        wants[key] = expected_sl2vl(expected.sl2class, ri, ro, vls_of, sw_role)
                    want = wants[key]
                    # a leaf's (down, up) turn; or a turn back to the switch the packet came
                    # from (parallel links, a trunk), which no route makes: dla leaves it at
                    # the class's first VL
                    either = (sw_role == "leaf" and ri == ro == "local") or (peer[i] is not None and peer[i] == peer[o])
                    got = n.sl2vl.get((i, o))
                    if got is None:
                        out["missing"].append(f"{_name(n, o)}: no SL2VL for in-port {i}")
                    elif got != want and not detour_ok(got, want, expected.sl2class, vls_of, degraded or either):
                        out["sl2vl"].append(
                            f"{_name(n, o)} in {i} ({roles.get((n.guid, i))}→"
                            f"{roles.get((n.guid, o))}) SL2VL {_vl(got)} planned {_vl(want)}"
                        )
        for p in present:
            role = roles.get((n.guid, p))
            want_t = expected.ports.get((n.guid, p)) or (expected.roles.get(role) if role else None)
            port = n.ports[p]
            if want_t is None or port.op_vls == 1:
                continue  # role not planned, or a single data VL: no VLArb
            if port.vlarb is None and role == "sw0":
                continue  # base switch port 0 has no data VLs and no VLArb
            if port.vlarb is None:
                out["missing"].append(f"{_name(n, p)} ({role}): no VLArb read back")
                continue
            a = port.vlarb
            bad = []
            if not _table_matches(a.high, want_t.high):
                bad.append(f"high {ArbTable.format_served(a.high)} planned {ArbTable.format_served(want_t.high)}")
            if not _table_matches(a.low, want_t.low):
                bad.append(f"low {ArbTable.format_served(a.low)} planned {ArbTable.format_served(want_t.low)}")
            if a.limit != want_t.limit:
                bad.append(f"VLHighLimit {a.limit} planned {want_t.limit}")
            if bad:
                out["vlarb"].append(f"{_name(n, p)} ({role}) " + "; ".join(bad))
    lines = [f"groups: {broken}"] if broken else []
    for kind, items in out.items():
        lines += items[:MAX_LINES_PER_KIND]
        if len(items) > MAX_LINES_PER_KIND:
            lines.append(f"... and {len(items) - MAX_LINES_PER_KIND} more {kind} differences")
    return lines


@dataclass(frozen=True)
class MtuFinding:
    """A port whose link runs below the plan's MTU: plan-sized packets cannot cross it, and
    the plan's shares and waits (computed for plan-sized packets) do not hold there."""

    node: str  # node description
    guid: int  # node GUID
    port: int
    active: int  # PortInfo NeighborMTU, bytes
    cap: int  # PortInfo MTUCap, bytes (0: not read)
    planned: int

    def __str__(self) -> str:
        cap = f", MTUCap {self.cap}" if self.cap else ""
        return (
            f"{self.node or '?'} 0x{self.guid:016x} port {self.port}: link MTU {self.active}{cap}, "
            f"below the plan's MTU {self.planned}"
        )


def mtu_findings(fabric: Fabric, planned: int) -> list[MtuFinding]:
    """One finding per linked port whose active MTU is below `planned` (bytes); empty when
    every link runs at least the plan's MTU. Ports whose MTU was not read (0: OpenSM's dumps
    carry none) are not judged: `mtu_unread` counts them."""
    return [
        MtuFinding(n.desc, n.guid, p.num, p.mtu, p.mtu_cap, planned)
        for n in sorted(fabric.nodes.values(), key=lambda n: n.guid)
        for p in sorted(n.ports.values(), key=lambda p: p.num)
        if p.num and p.remote is not None and 0 < p.mtu < planned
    ]


def data_vls_below(fabric: Fabric, data_vls: int) -> list[str]:
    """ "node[port] VLCap N" of each linked port whose VLCap holds fewer data VLs than the plan
    runs: under dla the plugin refuses the table file (ERR D1A3) and no class gets its VLs;
    real HCAs often stop at 8. The dry run and apply both refuse such a plan before OpenSM
    reads it (data_vls_shortfall)."""
    return [
        f"{n.desc}[{p}] VLCap {port.vl_cap}"
        for n in sorted(fabric.nodes.values(), key=lambda n: n.desc)
        for p, port in sorted(n.ports.items())
        if port.remote is not None and 0 < port.vl_cap < data_vls
    ]


def data_vls_shortfall(fabric: Fabric, data_vls: int, shown: int = 3) -> str | None:
    """What a refusal says after `FILE: fabric.data_vls: ` when ports run fewer data VLs than
    the plan (the first `shown` of them named), or None when every port runs them."""
    below = data_vls_below(fabric, data_vls)
    return shortfall_text(below, data_vls, shown) if below else None


def shortfall_text(below: list[str], data_vls: int, shown: int = 3) -> str:
    """data_vls_shortfall's words for the ports data_vls_below found."""
    return _vls_text(below, data_vls, "fewer", "lower fabric.data_vls to what every port runs", shown)


def _vls_text(below: list[str], data_vls: int, fewer: str, fix: str, shown: int) -> str:
    """The plan's data VLs, how many ports have `fewer` (the first `shown` named), what to do."""
    more = ", …" if len(below) > shown else ""
    return (
        f"the plan runs {data_vls} data VLs, {len(below)} of the fabric's ports {fewer} "
        f"({', '.join(below[:shown])}{more}): {fix}"
    )


def op_vls_below(fabric: Fabric, data_vls: int) -> list[str]:
    """ "node[port] runs N" of each linked port whose operational VLs are fewer than the plan's
    data VLs though it and its peer can run them (VLCap; a port that cannot is data_vls_below's):
    the SM capped it, through max_op_vls (a VLCap code, docs/fallback.md) or another SM's
    configuration. Its SL2VL entries past its OperVLs drop their packets."""

    def can(port: Port) -> bool:
        return port.vl_cap == 0 or port.vl_cap >= data_vls  # 0: the source did not carry it

    out = []
    for n in sorted(fabric.nodes.values(), key=lambda n: n.desc):
        for p, port in sorted(n.ports.items()):
            if port.remote is None or not 0 < port.op_vls < data_vls or not can(port):
                continue
            peer = fabric.nodes.get(port.remote[0])
            if peer is None or can(peer.ports.get(port.remote[1], port)):
                out.append(f"{n.desc}[{p}] runs {port.op_vls}")
    return out


def op_vls_text(below: list[str], data_vls: int, shown: int = 3) -> str:
    """op_vls_below's words, naming what sets OperVLs."""
    fix = (
        f"OpenSM caps OperVLs at max_op_vls, a VLCap code ({vlcap_code(data_vls)} for {data_vls} data VLs): "
        "the SM in force does not run the plan's configuration"
    )
    return _vls_text(below, data_vls, "operate fewer though they and their peers can run them", fix, shown)


def mtu_unread(fabric: Fabric) -> int:
    """Linked ports whose active MTU the source did not carry."""
    return sum(1 for n in fabric.nodes.values() for p in n.ports.values() if p.num and p.remote and not p.mtu)


def _vl(v: tuple[int, ...]) -> str:
    return "".join(f"{x:x}" for x in v)
