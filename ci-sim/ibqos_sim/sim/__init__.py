"""Packet-level simulation of a read-back fabric (the C core in ci-sim/core, driven via ctypes).

from ibqos_sim.sim import simulate, sweep, SimParams, TrafficSpec, TrafficClass
res = simulate(fabric, TrafficSpec(pattern="uniform"), SimParams(rate="QDR"), load=0.8)
res.accepted_pct, res.per_class, res.deadlock
"""

from .network import Network, base_lid_note, compile_network
from .overlay import VlarbOverlay, overlay_plan_vlarb, overlay_round_robin_vlarb
from .params import SimParams
from .result import SimResult
from .run import Simulation, parse_sweep, simulate, sweep
from .traffic import PATTERNS, TrafficClass, TrafficSpec, classes_from_plan

__all__ = [
    "PATTERNS",
    "Network",
    "SimParams",
    "SimResult",
    "Simulation",
    "TrafficClass",
    "TrafficSpec",
    "VlarbOverlay",
    "base_lid_note",
    "classes_from_plan",
    "compile_network",
    "overlay_plan_vlarb",
    "overlay_round_robin_vlarb",
    "parse_sweep",
    "simulate",
    "sweep",
]
