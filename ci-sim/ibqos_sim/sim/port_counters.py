"""What the simulator counted per port, as a switch's PMA would: bytes sent per SL
(PortXmitDataSL) and, on switch outputs, the time each VL waited while the output sent
another VL's packet (the arbitration part of PortVLXmitWait), inside the statistics window.

ibqos_sim.twin loads these into the patched ibsim, so `ibqos monitor` reads the simulated
traffic through the real MAD path (docs/monitor.md, "The digital twin").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .run import Simulation


@dataclass(frozen=True)
class PortCount:
    guid: int
    port: int
    sl_bytes: tuple[int, ...]  # 16 SLs
    vl_wait_ps: tuple[int, ...]  # 16 VLs; zero on CA ports (not measured there)


@dataclass(frozen=True)
class PortCounts:
    window_ps: int
    rate_gbps: float  # every link's rate in the simulation
    ports: dict[tuple[int, int], PortCount]  # (node GUID, port) -> counts; linked ports only


def port_counts(sim: Simulation) -> PortCounts:
    raw = sim.raw
    n = len(sim.net.ports)
    sl = np.ctypeslib.as_array(raw.port_sl_bytes, shape=(n, 16))
    wait = np.ctypeslib.as_array(raw.port_vl_wait_ps, shape=(n, 16))
    out = {}
    for g, (guid, num) in enumerate(sim.net.ports):
        if sl[g].any() or wait[g].any():
            out[(guid, num)] = PortCount(guid, num, tuple(int(x) for x in sl[g]), tuple(int(x) for x in wait[g]))
    return PortCounts(int(raw.window_ps), sim.params.rate_gbps, out)
