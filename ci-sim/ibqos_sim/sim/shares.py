"""Class shares of one saturated link, run until a confidence interval says they are known.

What a plan promises is per link: a class gets its share of a link while it is backlogged
there. Under all-to-all traffic a VL is not always backlogged everywhere (docs/simulator.md,
"Shares under all-to-all saturation"), so the dry run measures the arbiter where every class
is: every other CA sends every class, saturating, to one destination CA (an incast), and the
destination's link divides itself as its tables say.

The run goes in batches; each batch gives every class a share; the 95 % interval of the batch
means must be narrower than `target_pp` for every class (at least `min_batches` batches), or
the run stops at `max_us` and says the interval it reached.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .network import Network
from .params import SimParams
from .run import Simulation
from .traffic import TrafficClass, TrafficSpec, port_guid_name


@dataclass
class LinkShares:
    destination: str
    shares: dict[str, float]  # class -> % of the link over the whole measured time
    half_width_pp: dict[str, float]  # class -> 95 % confidence half-width of the batch means
    batches: int
    batch_us: float
    simulated_us: float
    converged: bool

    def to_json(self) -> dict:
        return dict(self.__dict__)


def measure_link_shares(
    net: Network,
    classes: list[TrafficClass],
    params: SimParams,
    *,
    target_pp: float = 0.02,
    batch_us: float = 200.0,
    min_batches: int = 10,
    max_us: float = 50_000.0,
) -> LinkShares:
    # by port GUID: descriptions can repeat (unset ones) and hold commas, the list's separator
    eps = [port_guid_name(net, e) for e in range(net.n_endpoints)]
    dst, srcs = eps[0], ",".join(eps[1:])
    incast = [c.model_copy(update={"pattern": "twonode", "rate": "saturate"}) for c in classes]
    max_batches = max(min_batches, int(max_us // batch_us))
    p = params.model_copy(update={"time_us": batch_us * max_batches})
    traffic = TrafficSpec(pattern="twonode", src=srcs, dst=dst, msg_bytes=params.mtu, classes=incast)
    names = [c.name for c in classes]
    per_batch: list[list[float]] = []
    warm_ps = int(params.warmup_us * 1e6)
    with Simulation(net, traffic, p, 1.0) as sim:
        last = [0] * len(names)
        for k in range(1, max_batches + 1):
            sim.run(warm_ps + int(k * batch_us * 1e6))
            now = [sim.raw.klass[i].rx_bytes for i in range(len(names))]
            delta = [a - b for a, b in zip(now, last, strict=True)]
            last = now
            total = sum(delta)
            if total:
                per_batch.append([100.0 * d / total for d in delta])
            if len(per_batch) >= min_batches and all(h <= target_pp for h in _half_widths(per_batch)):
                break
        total = sum(last)
    hw = _half_widths(per_batch)
    return LinkShares(
        destination=net.ep_desc(0),
        shares={n: round(100.0 * b / total, 4) if total else 0.0 for n, b in zip(names, last, strict=True)},
        half_width_pp={n: round(h, 4) for n, h in zip(names, hw, strict=True)},
        batches=len(per_batch),
        batch_us=batch_us,
        simulated_us=len(per_batch) * batch_us,
        converged=len(per_batch) >= min_batches and all(h <= target_pp for h in hw),
    )


def _half_widths(batches: list[list[float]]) -> list[float]:
    """95 % half-width of each column's mean (normal approximation; batches of a few hundred
    µs of a saturated link are close to independent)."""
    k = len(batches)
    if k < 2:
        return [math.inf] * (len(batches[0]) if batches else 1)
    out = []
    for col in zip(*batches, strict=True):
        mean = sum(col) / k
        var = sum((x - mean) ** 2 for x in col) / (k - 1)
        out.append(1.96 * math.sqrt(var / k))
    return out
