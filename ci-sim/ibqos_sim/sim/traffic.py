"""Traffic: which endpoint sends what, to whom, how often. Destinations (patterns) and
timing (CBR, Poisson, saturation) are separate, as in BookSim's TrafficPattern and
InjectionProcess; the core draws per-packet destinations from the sets built here."""

from __future__ import annotations

import ctypes
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from ibqos.errors import InputError
from ibqos.fabric.groups import NotADragonfly, dragonfly_groups
from ibqos.fabric.model import Fabric
from pydantic import BaseModel, ConfigDict, Field, field_validator

from . import _core
from .network import Network

PATTERNS = ("uniform", "hotspot", "stencil", "adversarial", "twonode")
Pattern = Literal["uniform", "hotspot", "stencil", "adversarial", "twonode"]


class TrafficClass(BaseModel):
    """One QoS class of a mix: every endpoint runs one flow of it."""

    # strict: `simulate --classes` reads these from an admin's YAML, where `sl: "1"` or
    # `msg_bytes: yes` is a typo (lax mode ran SL 1 and 1-byte messages); rate still takes 1
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str
    sl: int = Field(ge=0, le=15)
    msg_bytes: int = Field(4096, ge=1, le=1 << 30)
    rate: float | Literal["saturate"] = "saturate"  # fraction of the link, scaled by load
    pattern: Pattern = "uniform"
    priority: int = 0  # for reports: lower = more urgent

    @field_validator("rate")
    @classmethod
    def _rate(cls, v):
        if v != "saturate" and not 0 < v <= 1:
            raise ValueError("rate must be in (0, 1] of the link, or 'saturate'")
        return v


class TrafficSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pattern: Pattern = "uniform"
    process: Literal["cbr", "poisson"] = "poisson"
    sl: int = Field(0, ge=0, le=15)
    msg_bytes: int = Field(4096, ge=1, le=1 << 30)
    classes: list[TrafficClass] = []  # a QoS mix; empty: one class from pattern/sl
    hot_seed: int = 1  # hot-spot and two-node endpoint choice
    src: str | None = None  # two-node: source CA(s), comma-separated (default: the first)
    dst: str | None = None
    sls: list[int] = [0, 1, 2, 3]  # two-node: one saturating flow per SL

    def effective_classes(self) -> list[TrafficClass]:
        if self.classes:
            return list(self.classes)
        if self.pattern == "twonode":
            return [TrafficClass(name=f"sl{s}", sl=s, msg_bytes=self.msg_bytes, pattern="twonode") for s in self.sls]
        return [TrafficClass(name=f"sl{self.sl}", sl=self.sl, msg_bytes=self.msg_bytes, rate=1.0, pattern=self.pattern)]


@dataclass
class FlowSet:
    flows: ctypes.Array[_core.Flow]
    n_flows: int
    dests: np.ndarray
    classes: list[TrafficClass]
    offered_gbps: dict[int, float | None]  # class index -> total offered (None: saturating)
    measured: np.ndarray | None = None  # endpoints whose delivery counts (hot-spot)
    info: dict = field(default_factory=dict)


def _stencil_dims(n: int) -> tuple[int, int, int]:
    best = (n, 1, 1)
    for x in range(1, round(n ** (1 / 3)) + 2):
        if n % x:
            continue
        for y in range(x, math.isqrt(n // x) + 1):
            if (n // x) % y == 0:
                z = n // x // y
                # the most cubic grid: smallest largest side, then largest smallest side
                if (max(x, y, z), -min(x, y, z)) < (max(best), -min(best)):
                    best = (x, y, z)
    return best


def _stencil_neighbours(n: int) -> list[list[int]]:
    X, Y, Z = _stencil_dims(n)
    out = []
    for e in range(n):
        x, y, z = e % X, (e // X) % Y, e // (X * Y)
        nb = set()
        for dx, dy, dz in ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)):
            nb.add((x + dx) % X + ((y + dy) % Y) * X + ((z + dz) % Z) * X * Y)
        nb.discard(e)
        out.append(sorted(nb))
    return out


_ADVERSARIAL = "adversarial traffic sends every CA to the CAs of the next dragonfly group"


def adversarial_groups(fabric: Fabric, source: str | Path | None, field: str = "traffic") -> dict[int, int]:
    """Switch GUID -> dragonfly group, the groups the adversarial pattern sends between. The
    group checker's reason why a fabric is no dragonfly is in its own terms (cliques, global
    links), which on a tree or a ring names groups and cliques the fabric does not have, so the
    refusal says what the pattern needs instead; one group has no next group but itself (the
    pattern there was every CA to every CA, itself included, under the adversarial name)."""
    switches = sum(1 for _ in fabric.switches())
    try:
        groups = dragonfly_groups(fabric)
    except NotADragonfly as e:
        raise InputError(
            f"{_ADVERSARIAL}, and this fabric is no dragonfly: its {switches} switches do not split into groups "
            "of one size, each cabled all to all (or a dragonfly+ group: leaves and their spines), every two "
            "groups cabled together (docs/groups.md); use uniform, stencil or hotspot traffic on it",
            file=source,
            field=field,
        ) from e
    if len(set(groups.values())) < 2:
        raise InputError(
            f"{_ADVERSARIAL}, and this fabric is a single group ({switches} switch{'es' if switches > 1 else ''}), "
            "whose next group is itself: that is uniform traffic; use uniform",
            file=source,
            field=field,
        )
    return groups


def _groups(net: Network) -> list[int]:
    sw_group = adversarial_groups(net.fabric, net.source)
    out = []
    for ep in range(net.n_endpoints):
        sw = net.ep_switch(ep)
        if sw is None:
            raise InputError(f"endpoint {net.ep_desc(ep)} is not cabled to a switch", file=net.source, field="traffic")
        out.append(sw_group[sw])
    return out


def port_guid_name(net: Network, e: int) -> str:
    """The endpoint's port GUID as 0x%016x: a name no other endpoint has."""
    guid, port = net.endpoints[e]
    return f"0x{net.fabric.nodes[guid].ports[port].guid:016x}"


def _endpoint_finder(net: Network) -> Callable[[str, str], int]:
    """name -> endpoint: the first whose description is the name or whose node GUID it spells,
    or the one whose port GUID it spells (the one name each port has alone: a fabric's CAs can
    all share a description, "MT4123 ConnectX6 Mellanox Technologies" where no one set them).
    Indexed once: a source list naming every CA (the link-shares incast) looked each name up
    by a scan, quadratic in the CAs (20 s at 2550, minutes at 10,000)."""
    by_desc: dict[str, int] = {}
    by_guid: dict[str, int] = {}
    for e in range(net.n_endpoints):
        by_desc.setdefault(net.ep_desc(e), e)
        by_guid.setdefault(f"0x{net.endpoints[e][0]:016x}", e)
        by_guid.setdefault(port_guid_name(net, e), e)

    def find(name: str, what: str) -> int:
        hits = [e for e in (by_desc.get(name), by_guid.get(name.lower())) if e is not None]
        if not hits:
            raise InputError(f"no CA port named {name!r}", field=what)
        return min(hits)

    return find


# PLR0912, PLR0915: one branch per traffic pattern
def build_flows(net: Network, spec: TrafficSpec, load: float, rate_gbps: float, mtu: int) -> FlowSet:  # noqa: PLR0912, PLR0915
    if not 0 < load <= 1:
        raise InputError(f"load {load}: must be in (0, 1] of the link rate", field="load")
    N = net.n_endpoints
    classes = spec.effective_classes()
    if len(classes) > 4096:
        raise InputError("more than 4096 traffic classes", field="classes")
    rng = random.Random(spec.hot_seed)
    dests: list[int] = []
    flows: list[tuple] = []
    offered: dict[int, float | None] = {}
    info: dict = {}
    measured = None
    set_cache: dict[tuple, tuple[int, int]] = {}

    def dest_set(members: list[int]) -> tuple[int, int]:
        key = tuple(members)
        if key not in set_cache:
            set_cache[key] = (len(dests), len(members))
            dests.extend(members)
        return set_cache[key]

    groups = None
    hot = None
    stencil = None
    process = _core.POISSON if spec.process == "poisson" else _core.CBR
    for ci, c in enumerate(classes):
        saturate = c.rate == "saturate"
        frac = 1.0 if saturate else float(c.rate) * load
        pkt = min(mtu, c.msg_bytes)
        total = 0.0

        def add(src: int, mode: int, off: int = 0, ln: int = 0, f: float = frac, sat: bool = saturate) -> None:
            nonlocal total
            flows.append(  # add() runs in this iteration only: c, ci and pkt are this class's
                (src, c.sl, _core.SATURATE if sat else process, ci, pkt, c.msg_bytes, rate_gbps * f, mode, off, ln)  # noqa: B023
            )
            total += rate_gbps * f

        if c.pattern == "uniform":
            if N < 2:
                raise InputError("uniform traffic needs two CA ports", field="traffic")
            for e in range(N):
                add(e, _core.DEST_UNIFORM)
        elif c.pattern == "hotspot":
            if hot is None:
                hs = math.floor(0.06 * N)
                if hs < 2:
                    raise InputError(f"hot-spot needs floor(0.06*N) >= 2 sources; N = {N}", field="traffic")
                hd = max(1, math.floor(math.log2(hs)))
                sources = sorted(rng.sample(range(N), hs))
                targets = sorted(rng.sample([e for e in range(N) if e not in sources], hd))
                hot = (sources, targets)
                measured = np.array([e for e in range(N) if e not in targets], dtype=np.int64)
                info["hotspot"] = {
                    "sources": [net.ep_desc(e) for e in sources],
                    "destinations": [net.ep_desc(e) for e in targets],
                }
            sources, targets = hot
            off, ln = dest_set(targets)
            for e in range(N):
                if e in sources:  # hot sources send at 100% of the link
                    add(e, _core.DEST_SET, off, ln, f=1.0, sat=False)
                else:
                    add(e, _core.DEST_UNIFORM)
        elif c.pattern == "stencil":
            if stencil is None:
                stencil = _stencil_neighbours(N)
                info["stencil_dims"] = list(_stencil_dims(N))
            for e in range(N):
                if stencil[e]:
                    add(e, _core.DEST_SET, *dest_set(stencil[e]))
        elif c.pattern == "adversarial":
            if groups is None:
                groups = _groups(net)
                info["groups"] = len(set(groups))
            ids = sorted(set(groups))
            members = {g: [e for e in range(N) if groups[e] == g] for g in ids}
            for e in range(N):
                nxt = ids[(ids.index(groups[e]) + 1) % len(ids)]
                add(e, _core.DEST_SET, *dest_set(members[nxt]))
        elif c.pattern == "twonode":
            if N < 2:
                raise InputError("two-node traffic needs two CA ports", field="traffic")
            endpoint = _endpoint_finder(net)
            srcs = [endpoint(x.strip(), "src") for x in spec.src.split(",")] if spec.src else [0]
            dst = endpoint(spec.dst, "dst") if spec.dst else (1 if 1 not in srcs else 0)
            if dst in srcs:
                raise InputError("two-node source and destination are the same port", field="dst")
            info["twonode"] = {"src": [net.ep_desc(e) for e in srcs], "dst": net.ep_desc(dst)}
            measured = np.array([dst], dtype=np.int64)
            for src in srcs:
                add(src, _core.DEST_SET, *dest_set([dst]))
        else:
            raise InputError(f"unknown traffic pattern {c.pattern!r} (one of {', '.join(PATTERNS)})", field="traffic")
        offered[ci] = None if saturate else total
    arr = (_core.Flow * max(1, len(flows)))()
    for i, f in enumerate(flows):
        arr[i] = _core.Flow(*f)
    return FlowSet(arr, len(flows), np.array(dests or [0], dtype=np.uint32), classes, offered, measured, info)


def classes_from_plan(
    plan, msg_bytes: int = 4096, rate: float | Literal["saturate"] = "saturate", pattern: Pattern = "uniform"
) -> list[TrafficClass]:
    """One class per plan class on its first SL; high-priority classes rank first."""
    out = []
    for c in sorted(plan.classes, key=lambda c: c.index):
        out.append(
            TrafficClass(
                name=c.name,
                sl=c.sls[0],
                msg_bytes=msg_bytes,
                rate=rate,
                pattern=pattern,
                priority=0 if c.priority == "high" else 1,
            )
        )
    return out
