"""Table synthesis for one port role: candidates built by the seed methods, each checked by
the exact analyzer, the best one that meets every bound kept.

Method (docs/policy.md, "How the tables are filled"):
1. Slots. Each table's entries are split among its classes in proportion to their share of
   that table, raised where `max_distance` needs more, and spread by stride scheduling
   (layout.py). A slot holds one entry per VL of the class, same weight (DLA pairs).
2. Weights. A class's total weight follows its share (seed 000's pool), spread over its
   slots differing by at most one unit (seed 000's correction pass, spread evenly). The pool
   is tried at a few sizes around "one MTU per slot", where each visit of an entry sends one
   packet: smaller weights shorten everyone's wait but waste turns; larger ones resolve
   shares more finely.
3. Between the tables. In byte accounting the low table gets one turn per VLHighLimit*4096
   bytes of high traffic, so the low weights follow from the ratio of low to high shares and
   the limit (tried from small to large: small limits interleave the low table finely).
4. Every candidate is analysed exactly; shares must land within SHARE_TOL points and every
   bound must hold. Among those that do, the one with the smallest waits relative to the
   bounds wins. If none does, the error names the constraint the best candidate breaks,
   by how much, and what would make it feasible.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from ..arbiter import ArbTable
from ..arbiter.accounting import LIMIT_UNIT, UNIT
from ..arbiter.exact import NoPeriodError, analyze_exact
from ..arbiter.result import ArbAnalysis
from ..arbiter.shares import high_bytes_per_low_turn, long_run_shares
from ..arbiter.table import MAX_WEIGHT
from ..arbiter.trace import VlStats
from .layout import packed_weights, slot_counts, spread, spread_weights
from .targets import ClassTarget, RoleSpec

T = TypeVar("T")
# A change that may make a policy feasible: (location in the policy, value); None locates the
# violated field itself.
FixOffer = tuple[tuple[str | int, ...] | None, float]
Layout = tuple[list[int], list[int]]  # (slots per class, the slots' order as class positions)
Entries = list[tuple[int, int]]  # (VL, weight) in table order
Score = tuple[int, float, float, float]  # (violations, their badness, latency, share error): less is better

SHARE_TOL = 0.5  # percentage points, the acceptance bound
PERIOD_BUDGET = 30_000  # runs per exact analysis; longer periods are skipped, not analysed
MAX_EXACT = 10  # exact analyses per role, at most
MAX_ATTEMPTS = 40  # including those given up for a too long period
ENOUGH_FEASIBLE = 4  # stop once this many candidates meet every bound
LIMITS = (1, 2, 3, 4, 6, 8, 12, 16, 32, 64, 128, 254)


@dataclass(frozen=True)
class ClassResult:
    share: float
    max_distance: int | None
    mean_distance: float | None
    worst_wait_bytes: int | None
    worst_wait_us: float | None
    meets_bandwidth: bool
    meets_latency: bool

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Violation:
    target: ClassTarget | None
    field: str  # policy field to point at: bandwidth, max_distance, ...
    message: str  # what breaks, never how to fix it: fixes are checked first
    badness: float  # relative size of the violation, for ranking
    # Changes that may make the policy feasible, as (location, value); a location of None
    # means the violated field itself. fixes.py plans with each before offering it.
    fixes: tuple[FixOffer, ...] = ()


class Infeasible(Exception):
    def __init__(self, violation: Violation):
        self.violation = violation
        super().__init__(violation.message)


@dataclass(frozen=True)
class RoleResult:
    table: ArbTable
    analysis: ArbAnalysis
    per_class: dict[str, ClassResult]
    candidates: int


def synthesize(spec: RoleSpec) -> RoleResult:
    hi = [c for c in spec.classes if c.priority == "high"]
    lo = [c for c in spec.classes if c.priority == "low"]
    best, best_key, tried, feasible, attempts = None, None, 0, 0, 0
    best_violations: list[Violation] = []
    fallback = None
    for table in _candidates(spec, hi, lo):
        # The closed form gives exact shares for free; only candidates whose shares land
        # get the (costly) exact analysis of distances and waits.
        shares = long_run_shares(table, spec.mtu, spec.mode)
        err = max(abs(sum(shares.get(v, 0.0) for v in spec.vls(c)) - c.share) for c in spec.classes)
        if err > SHARE_TOL:
            if fallback is None or err < fallback[0]:
                fallback = (err, table)
            continue
        if tried >= MAX_EXACT or feasible >= ENOUGH_FEASIBLE or attempts >= MAX_ATTEMPTS:
            break
        attempts += 1
        try:
            an = analyze_exact(table, spec.mtu, spec.mode, spec.rate_gbps, max_runs=PERIOD_BUDGET)
        except NoPeriodError:  # a correct table whose period is too long to check
            continue
        tried += 1
        per_class, violations = _judge(spec, an)
        key = _score(spec, per_class, violations)
        feasible += not violations
        if best_key is None or key < best_key:
            best, best_key, best_violations = (table, an, per_class), key, violations
    if best is None and fallback is not None:
        table = fallback[1]
        try:
            an = analyze_exact(table, spec.mtu, spec.mode, spec.rate_gbps)
        except NoPeriodError as exc:
            raise Infeasible(
                Violation(None, "bandwidth", "no candidate table could be analysed exactly within the budget", 1.0)
            ) from exc
        per_class, best_violations = _judge(spec, an)
        best = (table, an, per_class)
    if best is None:
        raise Infeasible(
            Violation(
                None,
                "bandwidth",
                "no table with weights 1..255 within "
                f"the capacity ({spec.cap_high}/{spec.cap_low} entries) carries these "
                "shares",
                1.0,
            )
        )
    if best_violations:
        raise Infeasible(max(best_violations, key=lambda v: v.badness))
    return RoleResult(best[0], best[1], best[2], tried)


# ---- candidates -------------------------------------------------------------------------


def _candidates(spec: RoleSpec, hi: list[ClassTarget], lo: list[ClassTarget]) -> Iterator[ArbTable]:
    if not lo:
        for entries in _single_tables(spec, hi, spec.cap_high, "high"):
            yield ArbTable(entries, [], 255)
        return
    if not hi:
        for entries in _single_tables(spec, lo, spec.cap_low, "low"):
            yield ArbTable([], entries, 0)
        return
    phi_h = sum(c.share for c in hi)
    phi_l = sum(c.share for c in lo)
    ratio = phi_l / phi_h
    # Full low tables resolve shares finely; compact ones (fewest slots) serve a class with
    # small weights smoothly instead of in bursts of entries that all come due together.
    low_layouts = [_layout(spec, lo, spec.cap_low, "low"), _layout(spec, lo, spec.cap_low, "low", compact=True)]
    high_tables = list(_single_tables(spec, hi, spec.cap_high, "high"))
    limits = _limits(spec, ratio)
    for limit in limits:
        for high in high_tables:
            for layout in low_layouts:
                for low_entries in _low_table(spec, lo, layout, ratio, limit):
                    yield ArbTable(high, low_entries, limit)


def _limits(spec: RoleSpec, ratio: float) -> list[int]:
    """VLHighLimits whose low weights stay in 1..255 for this low:high ratio."""
    out = []
    for limit in (0,) + LIMITS:
        mean_w = ratio * high_bytes_per_low_turn(limit, spec.mtu, spec.mode) / UNIT
        if 1 <= mean_w <= MAX_WEIGHT:
            out.append(limit)
    if not out:
        most = MAX_WEIGHT * UNIT / high_bytes_per_low_turn(0 if spec.mtu < LIMIT_UNIT else 1, spec.mtu, spec.mode)
        share_max = 100 * most / (1 + most)
        low_share = 100 * ratio / (1 + ratio)
        if 0 < low_share - share_max <= SHARE_TOL:
            # Full low weights after every high packet fall short of the low guarantees by
            # less than the share tolerance: VLHighLimit 0 with the weights clamped at 255
            # is a candidate, and the share check decides per class.
            return [0]
        if low_share > share_max:
            raise Infeasible(
                Violation(
                    None,
                    "priority",
                    f"low-priority classes are guaranteed {low_share:.1f}% but one low turn "
                    f"(weight <= 255) per {high_bytes_per_low_turn(1, spec.mtu, spec.mode)} bytes of high "
                    f"traffic gives them at most {share_max:.1f}%",
                    1.0,
                    _shift_fixes(spec, math.ceil((low_share - share_max) * 10) / 10),
                )
            )
        raise Infeasible(
            Violation(
                None,
                "priority",
                f"high-priority classes are guaranteed {100 - low_share:.2f}%: more than "
                "VLHighLimit 254 can leave to the low table",
                1.0,
            )
        )
    return out[:4]


def _shift_fixes(spec: RoleSpec, points: float) -> tuple[FixOffer, ...]:
    """Ways to take `points` of guarantee off the low table: lower a fixed low share, or, when
    a low class takes the rest, raise a high share (the rest then shrinks by as much)."""
    lo_rest = any(c.priority == "low" and c.requested == "rest" for c in spec.classes)
    out: list[FixOffer] = []
    for c in spec.classes:
        if c.requested == "rest":
            continue
        if c.priority == "low" and not lo_rest:
            out.append((("classes", c.index, "bandwidth"), round(float(c.requested) - points, 2)))
        elif c.priority == "high" and lo_rest:
            out.append((("classes", c.index, "bandwidth"), round(float(c.requested) + points, 2)))
    return tuple(out)


def _layout(spec: RoleSpec, classes: list[ClassTarget], cap: int, side: str, compact: bool = False) -> Layout:
    vpc = spec.vls_per_class
    nslots = cap // vpc
    if len(classes) > nslots:
        raise Infeasible(
            Violation(
                classes[nslots],
                "priority",
                f"{len(classes)} {side}-priority classes need {len(classes) * vpc} entries "
                f"({vpc} per class) but the {side} table holds {cap} (fabric.vlarb_cap.{side})",
                1.0,
            )
        )
    minimum = []
    for c in classes:
        need = 1
        if c.max_distance is not None:
            # A VL is visited once per slot of its class; its pair and the other classes'
            # slots in between count as visits (docs/arbiter.md, Distances).
            need = math.ceil(nslots * vpc / max(c.max_distance - (vpc - 1), 1))
            if need > nslots:
                floor = vpc + 1
                raise Infeasible(
                    Violation(
                        c,
                        "max_distance",
                        f"max_distance {c.max_distance} needs the class in {need * vpc} of "
                        f"{nslots * vpc} {side} table entries, more than the table holds "
                        f"(fabric.vlarb_cap.{side} = {cap}); the smallest reachable distance is "
                        f"about {floor}",
                        1.0,
                        ((None, floor),),
                    )
                )
        minimum.append(need)
    if compact:
        counts = minimum if sum(minimum) <= nslots else None
    else:
        counts = slot_counts([c.share for c in classes], minimum, nslots)
    if counts is None:
        worst = max(range(len(classes)), key=lambda i: minimum[i])
        raise Infeasible(
            Violation(
                classes[worst],
                "max_distance",
                f"the latency bounds of the {side}-priority classes need {sum(minimum) * vpc} "
                f"entries but the {side} table holds {nslots * vpc}",
                1.0,
            )
        )
    order = spread(counts)
    return counts, order


def _single_tables(spec: RoleSpec, classes: list[ClassTarget], cap: int, side: str) -> Iterator[Entries]:
    counts, order = _layout(spec, classes, cap, side)
    nslots = len(order)
    total_share = sum(c.share for c in classes)
    frac = [c.share / total_share for c in classes]
    q = max(1, spec.mtu // UNIT)  # weight of one MTU
    t_min = max(math.ceil(counts[i] / frac[i]) for i in range(len(classes)))
    t_max = min(math.floor(MAX_WEIGHT * counts[i] / frac[i]) for i in range(len(classes)))
    if t_min > t_max:
        raise Infeasible(
            Violation(
                classes[0],
                "bandwidth",
                f"the {side} table cannot give these shares with weights 1..255 on "
                f"{nslots * spec.vls_per_class} entries",
                1.0,
            )
        )
    seen = set()
    for guess in (nslots * q, nslots * q // 2, nslots * q * 2, nslots * q // 4, t_max, nslots * q * 3):
        t = min(max(guess, t_min), t_max)
        for quantum, packed in _weight_styles(q):
            weights = _class_weights(spec, frac, counts, t, packed, quantum)
            if weights is None:
                continue
            entries = _entries(spec, classes, order, weights)
            key = tuple(entries)
            if key not in seen:
                seen.add(key)
                yield entries


def _weight_styles(q: int) -> list[tuple[int, bool]]:
    """(quantum, packed) in order of preference. Weights that are multiples of a quarter
    MTU keep every entry's deficit cycle at most 4 visits long, so the arbiter's period (and
    its exact analysis) stays short; finer weights resolve shares better."""
    out = [(max(1, q // 4), False), (max(1, q // 16), False), (1, True), (1, False)]
    return list(dict.fromkeys(out))


def _class_weights(
    spec: RoleSpec, frac: list[float], counts: list[int], total: float, packed: bool = False, quantum: int = 1
) -> list[list[int]] | None:
    q = max(1, spec.mtu // UNIT) if spec.mode == "packet" else quantum
    out = []
    for f, n in zip(frac, counts, strict=True):
        # Clamped to what the entries can hold; the share check judges the result.
        w_total = min(max(n * q, round(total * f / q) * q), (MAX_WEIGHT // q) * q * n)
        if q > 1:  # whole quanta per entry (packet accounting: whole packets)
            ws = [p * q for p in spread_weights(w_total // q, n)]
        else:
            ws = (packed_weights(w_total, n) if packed else None) or spread_weights(w_total, n)
        if max(ws) > MAX_WEIGHT or min(ws) < 1:
            return None
        out.append(ws)
    return out


def _entries(spec: RoleSpec, classes: list[ClassTarget], order: list[int], weights: list[list[int]]) -> Entries:
    used = [0] * len(classes)
    entries = []
    for ci in order:
        w = weights[ci][used[ci]]
        used[ci] += 1
        for vl in spec.vls(classes[ci]):
            entries.append((vl, w))
    return entries


def _low_table(spec: RoleSpec, lo: list[ClassTarget], layout: Layout, ratio: float, limit: int) -> list[Entries]:
    counts, order = layout
    nslots = len(order)
    mean_w = ratio * high_bytes_per_low_turn(limit, spec.mtu, spec.mode) / UNIT
    total = mean_w * nslots
    phi_l = sum(c.share for c in lo)
    out = []
    for quantum, packed in _weight_styles(max(1, spec.mtu // UNIT)):
        weights = _class_weights(spec, [c.share / phi_l for c in lo], counts, total, packed, quantum)
        if weights is not None:
            entries = _entries(spec, lo, order, weights)
            if entries not in out:
                out.append(entries)
    return out


# ---- judging ----------------------------------------------------------------------------


def class_results(spec: RoleSpec, an: ArbAnalysis) -> dict[str, ClassResult]:
    return _judge(spec, an)[0]


def _known(xs: list[T | None]) -> list[T] | None:
    """All of `xs`, or None when one is unknown (an unbounded distance or wait)."""
    known = [x for x in xs if x is not None]
    return known if len(known) == len(xs) else None


def _judge(spec: RoleSpec, an: ArbAnalysis) -> tuple[dict[str, ClassResult], list[Violation]]:
    per_class: dict[str, ClassResult] = {}
    violations: list[Violation] = []
    for c in spec.classes:
        stats = [an.per_vl.get(v, VlStats(0.0, None, None, None, None)) for v in spec.vls(c)]
        share = sum(s.share for s in stats)
        dists = [s.max_distance for s in stats]
        means = [s.mean_distance for s in stats]
        waits = [s.worst_wait_bytes for s in stats]
        max_d = None if (d := _known(dists)) is None else max(d)
        mean_d = None if (m := _known(means)) is None else sum(m) / len(m)
        wait = None if (w := _known(waits)) is None else max(w)
        wait_us = None if wait is None else wait * 8 / (spec.rate_gbps * 1000)
        ok_bw = abs(share - c.share) <= SHARE_TOL
        ok_lat = True
        if not ok_bw:
            violations.append(
                Violation(
                    c,
                    "bandwidth",
                    f"gets {share:.2f}% but needs {c.share:.2f}% ±{SHARE_TOL}: the table capacity cannot resolve it",
                    abs(share - c.share) / SHARE_TOL,
                )
            )
        if c.max_distance is not None and (max_d is None or max_d > c.max_distance):
            ok_lat = False
            violations.append(
                Violation(
                    c,
                    "max_distance",
                    f"max distance {max_d if max_d is not None else 'unbounded'} exceeds the bound {c.max_distance}",
                    (max_d or 1e9) / c.max_distance,
                    ((None, max_d),) if max_d is not None else (),
                )
            )
        if c.max_wait_bytes is not None and (wait is None or wait > c.max_wait_bytes):
            ok_lat = False
            floor_us = _wait_floor_us(spec, share)
            violations.append(
                Violation(
                    c,
                    "max_latency_us",
                    f"worst wait {_fmt_us(wait_us)} exceeds the bound {c.max_latency_us:g} µs "
                    f"(with {share / spec.vls_per_class:.1f}% of the link per VL and "
                    f"{spec.mtu}-byte packets a VL waits at least {floor_us:.2f} µs)",
                    (wait or 1e12) / c.max_wait_bytes,
                    ((None, math.ceil(wait_us * 100) / 100),) if wait_us is not None else (),
                )
            )
        per_class[c.name] = ClassResult(share, max_d, mean_d, wait, wait_us, ok_bw, ok_lat)
    return per_class, violations


def _wait_floor_us(spec: RoleSpec, class_share: float) -> float:
    """Under saturation a VL with fraction f of the bytes waits on average mtu*(1-f)/f
    between its packets; the worst wait cannot be smaller."""
    f = class_share / spec.vls_per_class / 100
    if f <= 0:
        return math.inf
    return spec.mtu * (1 - f) / f * 8 / (spec.rate_gbps * 1000)


def _fmt_us(us: float | None) -> str:
    return "unbounded" if us is None else f"{us:.2f} µs"


def _score(spec: RoleSpec, per_class: dict[str, ClassResult], violations: list[Violation]) -> Score:
    bad = sum(v.badness for v in violations)
    lat = 0.0
    for c in spec.classes:
        r = per_class[c.name]
        if c.max_wait_bytes and r.worst_wait_bytes is not None:
            lat += r.worst_wait_bytes / c.max_wait_bytes
        elif r.worst_wait_bytes is not None:
            # Unbounded classes still prefer smooth service: wait relative to the floor.
            floor = _wait_floor_us(spec, r.share) * spec.rate_gbps * 1000 / 8
            lat += 0.1 * r.worst_wait_bytes / max(floor, spec.mtu)
        if c.max_distance and r.max_distance is not None:
            lat += r.max_distance / c.max_distance
    err = max(abs(per_class[c.name].share - c.share) for c in spec.classes)
    # Shares off by half the tolerance weigh like one class at its latency bound.
    return (len(violations), bad, round(lat + 2 * err / SHARE_TOL, 6), err)
