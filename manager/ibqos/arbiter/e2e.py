"""The end-to-end latency bound of one packet of a class (docs/policy.md, "Two latency bounds").

Along the class's worst route the packet crosses one output port per link: the source CA's
port, then one output port per switch. At each it waits at most the port role's worst wait
for an arbitration turn of the class's VLs (the exact analysis, docs/arbiter.md), then is
serialized (one MTU at the link rate) and crosses the cable; each switch adds its forwarding
latency. The sum bounds arbitration + serialization + wire + switch, and nothing else: it
assumes the packet is at the head of its VL at every port (the class's own traffic does not
queue in front of it) and that the next hop has the credits (no congestion of its VL).

Which roles a route crosses comes from the routing (dla's dragonfly routes, seed 003 Fig. 4:
local, global, local hops) and the number of switch-to-switch hops: the dragonfly's 3 by
default, or what a read-back fabric's routes show.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

NS_PER_M = 5.0  # signal propagation in copper and fibre, about 2/3 of c
DLA_SWITCH_HOPS = 3  # seed 003 Fig. 4: local, global, local at most on a pristine dragonfly


def route_ports(routing: str, switch_hops: int) -> tuple[tuple[str, ...], ...]:
    """The output ports of the worst route with `switch_hops` switch-to-switch links, each as
    the roles it may have (the bound charges the worst of them). Without dla every switch port
    runs the terminal tables (docs/policy.md, "Rendered files")."""
    if routing != "dla":
        return (("ca",),) + (("terminal",),) * (switch_hops + 1)
    inner: tuple[tuple[str, ...], ...] = {
        0: (),
        1: (("local", "global"),),  # one local hop, or one global hop between two groups
        2: (("local",), ("global",)),  # local then global, or global then local: same sum
        3: (("local",), ("global",), ("local",)),
    }.get(switch_hops, (("local", "global"),) * switch_hops)  # detours around faults
    return (("ca",),) + inner + (("terminal",),)


@dataclass(frozen=True)
class EndToEnd:
    """One class's bound and its parts, in µs."""

    bound_us: float | None  # None: a port on the route never serves the class
    ports: tuple[str, ...]  # the role charged at each output port, e.g. ca, local, global, ...
    switch_hops: int
    wait_us: float | None  # arbitration: the sum of the worst waits
    serialization_us: float
    wire_us: float
    switch_us: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "bound_us": _r(self.bound_us),
            "ports": list(self.ports),
            "switch_hops": self.switch_hops,
            "wait_us": _r(self.wait_us),
            "serialization_us": _r(self.serialization_us),
            "wire_us": _r(self.wire_us),
            "switch_us": _r(self.switch_us),
        }


class LinkParams(Protocol):
    """What the bound needs of a fabric: the policy's `fabric:` and the plan's carry it alike."""

    @property
    def routing(self) -> str: ...
    @property
    def mtu(self) -> int: ...
    @property
    def switch_latency_ns(self) -> float: ...
    @property
    def max_cable_m(self) -> float: ...
    @property
    def rate_gbps(self) -> float: ...


def end_to_end_on(fabric: LinkParams, wait_us: Callable[[str], float | None], switch_hops: int) -> EndToEnd:
    """`end_to_end` with the routing, MTU, rate, switch and cable latency of `fabric`."""
    return end_to_end(
        wait_us,
        routing=fabric.routing,
        switch_hops=switch_hops,
        mtu=fabric.mtu,
        rate_gbps=fabric.rate_gbps,
        switch_latency_ns=fabric.switch_latency_ns,
        cable_m=fabric.max_cable_m,
    )


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def end_to_end(
    wait_us: Callable[[str], float | None],
    *,
    routing: str,
    switch_hops: int,
    mtu: int,
    rate_gbps: float,
    switch_latency_ns: float,
    cable_m: float,
) -> EndToEnd:
    """`wait_us(role)`: the class's worst wait for an arbitration turn at a port of that role
    (None when the role never serves it)."""
    ports = route_ports(routing, switch_hops)
    charged: list[str] = []
    total: float | None = 0.0
    for roles in ports:
        worst, w = _worst({r: wait_us(r) for r in roles})
        charged.append(worst)
        total = None if total is None or w is None else total + w
    links = len(ports)
    ser = links * mtu * 8 / (rate_gbps * 1000.0)
    wire = links * cable_m * NS_PER_M / 1000.0
    sw = (links - 1) * switch_latency_ns / 1000.0
    return EndToEnd(
        bound_us=None if total is None else total + ser + wire + sw,
        ports=tuple(charged),
        switch_hops=switch_hops,
        wait_us=total,
        serialization_us=ser,
        wire_us=wire,
        switch_us=sw,
    )


def _worst(waits: dict[str, float | None]) -> tuple[str, float | None]:
    """The role with the longest wait (one that never serves the class is the worst)."""
    for role, w in waits.items():
        if w is None:
            return role, None
    role = max(waits, key=lambda r: waits[r] or 0.0)
    return role, waits[role]


def describe_route(e: EndToEnd) -> str:
    """'ca → local → global → local → terminal (3 switch hops)'"""
    return " → ".join(e.ports) + f" ({e.switch_hops} switch hop{'s' if e.switch_hops != 1 else ''})"
