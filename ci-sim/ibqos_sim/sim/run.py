"""Run the core on a network and a traffic spec; turn its counters into a SimResult."""

from __future__ import annotations

import ctypes as C
import errno
import os
import time
from collections.abc import Callable, Iterable

import numpy as np
from ibqos.errors import ExternalError, InputError
from ibqos.fabric.model import Fabric

from . import _core
from .network import Network, compile_network
from .params import SimParams
from .result import SimResult, build_result
from .traffic import TrafficSpec, build_flows


def _ptr(a: np.ndarray, ctype):
    return a.ctypes.data_as(C.POINTER(ctype))


def network_for(fabric: Fabric | Network, params: SimParams, source: str = "fabric") -> Network:
    if isinstance(fabric, Network):
        return fabric
    return compile_network(fabric, rate_gbps=params.rate_gbps, source=source)


class Simulation:
    """One core instance. Use as a context manager; run() may be called in steps."""

    def __init__(self, net: Network, traffic: TrafficSpec, params: SimParams, load: float, *, audit: bool = False):
        self.net, self.traffic, self.params, self.load = net, traffic, params, load
        self.flowset = build_flows(net, traffic, load, params.rate_gbps, params.mtu)
        a = net.arrays
        self._keep = [a, self.flowset]
        ps = 1000
        self.end_ps = int((params.warmup_us + params.time_us) * 1e6)
        cfg = _core.Config(
            n_nodes=len(net.nodes),
            node_is_switch=_ptr(a["node_is_switch"], C.c_uint8),
            node_nports=_ptr(a["node_nports"], C.c_uint32),
            node_port_base=_ptr(a["node_port_base"], C.c_uint32),
            node_route_off=_ptr(a["node_route_off"], C.c_uint32),
            node_sl2vl_off=_ptr(a["node_sl2vl_off"], C.c_uint32),
            n_ports=len(net.ports),
            port_peer=_ptr(a["port_peer"], C.c_int32),
            port_op_vls=_ptr(a["port_op_vls"], C.c_uint8),
            port_rate_gbps=_ptr(a["port_rate_gbps"], C.c_double),
            port_arb_high_off=_ptr(a["port_arb_high_off"], C.c_uint32),
            port_arb_high_len=_ptr(a["port_arb_high_len"], C.c_uint32),
            port_arb_low_off=_ptr(a["port_arb_low_off"], C.c_uint32),
            port_arb_low_len=_ptr(a["port_arb_low_len"], C.c_uint32),
            port_arb_limit=_ptr(a["port_arb_limit"], C.c_uint8),
            arb_entries=a["arb_entries"].ctypes.data_as(C.POINTER(_core.VlarbEntry)),
            routes=_ptr(a["routes"], C.c_uint8),
            sl2vl_idx=_ptr(a["sl2vl_idx"], C.c_uint16),
            sl2vl_rows=_ptr(a["sl2vl_rows"], C.c_uint8),
            n_sl2vl_rows=len(a["sl2vl_rows"]) // 16,
            n_endpoints=net.n_endpoints,
            ep_port=_ptr(a["ep_port"], C.c_uint32),
            n_flows=self.flowset.n_flows,
            flows=self.flowset.flows,
            n_dests=len(self.flowset.dests),
            dests=_ptr(self.flowset.dests, C.c_uint32),
            n_classes=max(1, len(self.flowset.classes)),
            buf_credits=params.buffer_credits,
            mtu=params.mtu,
            prop_ps=int(params.prop_ns * ps),
            sw_latency_ps=int(params.switch_ns * ps),
            voq=int(params.voq),
            accounting=_core.ACCOUNTING[params.accounting],
            seed=params.seed,
            warmup_ps=int(params.warmup_us * 1e6),
            end_ps=self.end_ps,
            deadlock_ps=int(params.deadlock_us * 1e6),
            evq=params.evq.encode(),
            audit=int(audit),
            input_reads=1 if params.input_reads == 1 else 0,
            pair_sl=_ptr(a["pair_sl"], C.c_uint8) if "pair_sl" in a else None,
            voq_buffers=int(params.voq_buffers == "per-output"),
        )
        self._lib = _core.load()
        self._sim = C.c_void_p()
        err = C.create_string_buffer(512)
        rc = self._lib.ibs_create(C.byref(cfg), C.byref(self._sim), err, len(err))
        if rc == -errno.EINVAL:  # the model's fault, named by the core
            raise InputError(f"simulator rejects the model: {err.value.decode() or 'EINVAL'}", file=net.source)
        if rc:
            raise core_error(rc, "ibs_create")
        self.wall_s = 0.0
        self.cpu_s = 0.0  # this process's CPU time in the core: the machine is shared

    def run(self, until_ps: int | None = None) -> None:
        t0, c0 = time.perf_counter(), time.process_time()
        rc = self._lib.ibs_run(self._sim, self.end_ps if until_ps is None else until_ps)
        self.wall_s += time.perf_counter() - t0
        self.cpu_s += time.process_time() - c0
        if rc:
            raise core_error(rc, "ibs_run")

    @property
    def raw(self) -> _core.Results:
        results: _core.Results = self._lib.ibs_results(self._sim).contents
        return results

    def audit(self) -> _core.Audit:
        """Walk every queue and buffer; needs Simulation(..., audit=True)."""
        a = _core.Audit()
        if self._lib.ibs_audit(self._sim, C.byref(a)):
            raise ValueError("the simulation was created without audit=True")
        return a

    def result(self) -> SimResult:
        return build_result(self)

    def close(self) -> None:
        if getattr(self, "_sim", None):
            self._lib.ibs_destroy(self._sim)
            self._sim = C.c_void_p()

    def __enter__(self) -> Simulation:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        self.close()


def simulate(
    fabric: Fabric | Network,
    traffic: TrafficSpec | None = None,
    params: SimParams | None = None,
    load: float = 1.0,
    *,
    progress: Callable[[float], None] | None = None,
) -> SimResult:
    """Simulate one load point. The library call the dry run uses."""
    params = params or SimParams()
    traffic = traffic or TrafficSpec()
    net = network_for(fabric, params)
    with Simulation(net, traffic, params, load) as sim:
        steps = 20 if progress else 1
        for k in range(1, steps + 1):
            sim.run(sim.end_ps * k // steps)
            if progress:
                progress(k / steps)
            if sim.raw.status != _core.RUNNING:
                break
        return sim.result()


def sweep(
    fabric: Fabric | Network,
    traffic: TrafficSpec | None = None,
    params: SimParams | None = None,
    loads: Iterable[float] = (),
    *,
    progress: Callable[[float], None] | None = None,
) -> list[SimResult]:
    params = params or SimParams()
    net = network_for(fabric, params)
    return [simulate(net, traffic, params, load) for load in loads if progress is None or progress(load) is None]


def core_error(rc: int, call: str) -> Exception:
    """The C core's -errno as the error it is: out of memory, or a bug in the core."""
    if rc == -errno.ENOMEM:
        return MemoryError(f"{call}: the simulator core ran out of memory")
    name = errno.errorcode.get(-rc, str(rc))
    return ExternalError(f"{call} failed with {name} ({os.strerror(-rc) if rc < 0 else rc})")


MAX_SWEEP_POINTS = 1000


def parse_sweep(text: str) -> list[float]:
    """`0.1:1.0:0.1` -> [0.1, 0.2, ..., 1.0]."""
    try:
        a, b, s = (float(x) for x in text.split(":"))
    except ValueError as exc:
        raise InputError(f"{text!r}: want START:STOP:STEP", field="--sweep") from exc
    if not (0 < a <= b <= 1 and s > 0):
        raise InputError(f"{text!r}: loads must satisfy 0 < START <= STOP <= 1, STEP > 0", field="--sweep")
    n = round((b - a) / s) + 1
    if n > MAX_SWEEP_POINTS:  # each point is a whole simulation: 1e-9 steps would be 1e9 of them
        raise InputError(f"{text!r} gives {n} loads; at most {MAX_SWEEP_POINTS}: take a larger STEP", field="--sweep")
    loads = sorted({round(a + i * s, 6) for i in range(n) if a + i * s <= b + 1e-9})
    return loads
