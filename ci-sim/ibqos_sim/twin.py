"""The digital twin: counter values the packet simulator produced, loaded into the patched
ibsim (ci-sim/ibsim-patch/0003-pma-data-per-sl.patch) through its console, so the monitor reads them over the PMA.

Time: the simulator measures a window of microseconds at its own link rate; ibsim's links are
4X SDR. `replay_s` stretches the window so that a link the simulator kept busy is as busy on
ibsim's link over replay_s seconds: every byte count is multiplied by the same factor, which
leaves each link's class shares as simulated (to one 4-byte counter word).

Counter encodings as the PMA's: PortXmitDataSL in octets / 4, 32 bits, starting from `base`
(so a run crosses the wrap); PortVLXmitWait in ticks of 1 ns, 16 bits (a wait longer than
65535 ticks loads as 65535: the monitor uses the ticks to tell a waiting VL, and reports them).
"""

from __future__ import annotations

from .sim.port_counters import PortCounts

WAIT_TICK_PS = 1000
IBSIM_LINK_BYTES_PER_S = 4 * 2.5e9 * 0.8 / 8  # 4X SDR data rate, what ibsim's links report


def scale_for(counts: PortCounts, replay_s: float) -> float:
    """Bytes on ibsim per simulated byte."""
    sim_bytes_per_s = counts.rate_gbps * 1e9 / 8
    return replay_s * IBSIM_LINK_BYTES_PER_S / (counts.window_ps * 1e-12 * sim_bytes_per_s)


def words(sl_bytes: int, scale: float) -> int:
    return int(sl_bytes * scale) // 4


def commands(
    counts: PortCounts,
    names: dict[int, str],
    scale: float,
    base: int = 0,
    sl_bytes: dict[tuple[int, int], tuple[int, ...]] | None = None,
) -> list[str]:
    """ibsim console lines loading every counted port: PortXmitDataSL at base + the scaled
    bytes (mod 2^32), PortVLXmitWaitCounters at the wait. `sl_bytes` overrides a port's
    simulated bytes (a test planting a squeezed class). `names`: node GUID -> ibsim node name."""
    out = []
    for key, pc in sorted(counts.ports.items()):
        node, port = names[pc.guid], pc.port
        per_sl = (sl_bytes or {}).get(key, pc.sl_bytes)
        for sl, b in enumerate(per_sl):
            if b or base:
                v = (base + words(b, scale)) % 2**32
                out.append(f'PerformanceSet "{node}"[{port}] PortXmitDataSL.PortXmitDataSL{sl}={v}')
        for vl, ps in enumerate(pc.vl_wait_ps):
            if ps:
                ticks = min(0xFFFF, -(-ps // WAIT_TICK_PS))
                out.append(f'PerformanceSet "{node}"[{port}] PortVLXmitWaitCounters.PortVLXmitWaitCounters{vl}={ticks}')
    return out


def baseline(counts: PortCounts, names: dict[int, str], base: int) -> list[str]:
    """Every counted port's PortXmitDataSL at `base` and its wait counters at zero."""
    out = []
    for pc in counts.ports.values():
        node = names[pc.guid]
        out += [f'PerformanceSet "{node}"[{pc.port}] PortXmitDataSL.PortXmitDataSL{sl}={base}' for sl in range(16)]
        out += [
            f'PerformanceSet "{node}"[{pc.port}] PortVLXmitWaitCounters.PortVLXmitWaitCounters{vl}=0'
            for vl in range(16)
        ]
    return out
