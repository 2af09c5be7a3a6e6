"""The policy's classification as qos-policy.conf port groups and match rules.

Meaning (docs/policy.md, "How traffic is classified"): classes are tried in policy order and
the first class whose match matches a path gives its SL; nothing matching gives the default
class. Two facts of OpenSM 3.3.23 (osm_qos_policy.c, osm_qos_parser_y.y) shape the output:

- A `port-group` holds a port when *any* of its lines matches, so `node-type: CA` next to
  `port-name:` lines is every CA. Here `node_type` filters the named ports instead: it is
  rendered as a `node-type` line only in a group that names nothing else, and resolved
  against the fabric's port types (when the renderer is given them) in a group that does.
- The SA takes the first `qos-match-rule` that matches, and OpenSM appends every `qos-ulps`
  entry after *all* match rules wherever the section sits. A ULP of an early class would
  lose to a group rule of a later one, so ULPs are rendered as match rules, in their class's
  place, with the service IDs, P_Keys and port GUIDs OpenSM's own ULP parser gives them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..plan import PlanClass

# OpenSM 3.3.23 include/opensm/osm_qos_policy.h: the ULPs' service-ID spaces.
SDP_BASE = 0x10000  # sdp: 0x10000-0x1ffff, or base + TCP port
RDS_ISER_BASE = 0x1060000  # rds and iser: base + TCP port
RDS_PORT, ISER_PORT = 0x48CA, 0x0CBC  # their default ports
IPOIB_DEFAULT_PKEY = "0x7fff"


@dataclass
class Group:
    name: str
    use: str
    port_guid: list[str] = field(default_factory=list)
    port_name: list[str] = field(default_factory=list)
    node_type: list[str] = field(default_factory=list)
    pkey: list[str] = field(default_factory=list)
    partition: list[str] = field(default_factory=list)

    @property
    def port_name_osm(self) -> list[str]:
        """The port names as qos-policy.conf must spell them: OpenSM 3.3.23's lexer ends an
        unquoted name at whitespace and '#' (Linux's default node description, "host
        mlx5_0", then matched nothing: checked with the SA on ibsim), so those are quoted."""
        return [f'"{n}"' if any(c.isspace() or c == "#" for c in n) else n for n in self.port_name]


@dataclass
class Rule:
    cls: str
    use: str
    source: list[str] = field(default_factory=list)
    destination: list[str] = field(default_factory=list)
    service_id: list[str] = field(default_factory=list)
    pkey: list[str] = field(default_factory=list)
    qos_class: list[str] = field(default_factory=list)


def _offset(text: str, base: int) -> str:
    """'5004' or '5004-5005' (TCP ports) -> the service-ID range base + port."""
    return "-".join(hex(base + int(p)) for p in text.split("-"))


def ulp_rule(cls: str, i: int, u: dict[str, Any], groups: list[Group]) -> Rule:
    """One qos-ulps entry as the match rule OpenSM's parser would make of it."""
    rule = Rule(
        cls, f"ibqos class {cls}: ulp {u['ulp']}" + (f" {k.replace('_', '-')} {u[k]}" if (k := _ulp_key(u)) else "")
    )
    ulp, key = u["ulp"], _ulp_key(u)
    if ulp == "sdp":
        rule.service_id = [_offset(u["port_num"], SDP_BASE) if key else f"{hex(SDP_BASE)}-{hex(SDP_BASE + 0xFFFF)}"]
    elif ulp in ("rds", "iser"):
        default = RDS_PORT if ulp == "rds" else ISER_PORT
        rule.service_id = [_offset(u["port_num"], RDS_ISER_BASE) if key else hex(RDS_ISER_BASE + default)]
    elif ulp == "ipoib":
        rule.pkey = [u["pkey"] if key else IPOIB_DEFAULT_PKEY]
    elif key in ("service_id", "pkey"):  # any
        setattr(rule, key, [u[key]])
    elif key in ("target_port_guid", "source_port_guid"):  # srp, any
        g = Group(f"{cls}.ulp{i}", f"ibqos class {cls}: {rule.use.split(': ', 1)[1]}", port_guid=[u[key]])
        groups.append(g)
        (rule.destination if key == "target_port_guid" else rule.source).append(g.name)
    # `any` with no criterion matches every path of the class's remaining traffic.
    return rule


def _ulp_key(u: dict[str, Any]) -> str | None:
    return next(
        (k for k in ("pkey", "port_num", "service_id", "target_port_guid", "source_port_guid") if u.get(k) is not None),
        None,
    )


def policy_rules(
    classes: Iterable[PlanClass], port_types: dict[str, str] | None = None
) -> tuple[list[Group], list[Rule], list[str]]:
    """(port groups, match rules in precedence order, notes) for the plan's classes.

    `port_types` maps port names ("<node description>/P<n>") and port GUIDs ("0x…") to node
    types (CA, SWITCH, ROUTER); without it a `node_type` filter keeps every named port."""
    groups: list[Group] = []
    rules: list[Rule] = []
    notes: list[str] = []
    for c in classes:
        m = c.match or {}
        names = []
        for g in m.get("groups") or []:
            grp = _group(c.name, g, port_types, notes)
            if grp is not None:
                groups.append(grp)
                names.append(grp.name)
        crit = {k: list(m.get(k) or []) for k in ("service_id", "pkey", "qos_class")}
        direction = m.get("direction", "either")
        use = f"ibqos class {c.name}"
        if m.get("groups"):
            if not names:
                notes.append(
                    f"class {c.name}: its port groups hold no port, so its group rule "
                    "is left out (it would otherwise match every path)"
                )
            elif direction == "either":
                rules.append(Rule(c.name, use + ": source in its groups", source=names, **crit))
                rules.append(Rule(c.name, use + ": destination in its groups", destination=names, **crit))
            else:
                rules.append(
                    Rule(
                        c.name,
                        use + f": {direction} in its groups",
                        source=names if direction in ("source", "both") else [],
                        destination=names if direction in ("destination", "both") else [],
                        **crit,
                    )
                )
        elif any(crit.values()):
            rules.append(Rule(c.name, use, **crit))
        for i, u in enumerate(m.get("ulps") or []):
            rules.append(ulp_rule(c.name, i, u, groups))
    return groups, rules, notes


_SELECTORS = ("port_guid", "port_name", "pkey", "partition")


def _group(cls: str, g: dict[str, Any], port_types: dict[str, str] | None, notes: list[str]) -> Group | None:
    grp = Group(g["name"], f"ibqos class {cls}", **{k: list(g.get(k) or []) for k in _SELECTORS})
    types = list(g.get("node_type") or [])
    if port_types is not None:
        # a mistyped node description matches nothing, silently, in OpenSM too
        unknown = [p for p in grp.port_name if p not in port_types]
        if unknown:
            notes.append(
                f"class {cls}: port group {grp.name}: port_name {', '.join(map(repr, unknown))} "
                "names no port of this fabric"
            )
    if not any(getattr(grp, k) for k in _SELECTORS):
        grp.node_type = types  # a group of node types only
        return grp
    if types and port_types is not None:
        want = set(types) | ({"CA", "SWITCH", "ROUTER"} if "ALL" in types else set())
        for k in ("port_name", "port_guid"):
            # A port the fabric does not list, or a GUID range, is kept: the filter drops
            # only ports it knows to be of another type.
            dropped = [p for p in getattr(grp, k) if _type_of(p, k, port_types) not in (None, *want)]
            if dropped:
                notes.append(f"port group {grp.name}: node_type {', '.join(types)} leaves out {', '.join(dropped)}")
            setattr(grp, k, [p for p in getattr(grp, k) if p not in dropped])
        if not any(getattr(grp, k) for k in _SELECTORS):
            return None
    return grp


def _type_of(port: str, kind: str, port_types: dict[str, str]) -> str | None:
    if kind == "port_guid":
        return None if "-" in port else port_types.get(f"0x{int(port, 16):x}")
    return port_types.get(port)
