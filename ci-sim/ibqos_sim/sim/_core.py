"""ctypes binding of libibqos_sim.so (ci-sim/core/include/ibqos_sim.h). Mirrors the C structs
field for field; nothing else in Python knows the C layout."""

from __future__ import annotations

import ctypes as C
import functools
import os
from pathlib import Path

from ibqos.errors import ExternalError
from ibqos.paths import product

LIB_NAME = "libibqos_sim.so"
# ibs_version() of the core whose structs this file mirrors. IBQOS_SIM_ACCEPT_ABI names older
# cores whose structs are a prefix of these (the speed bench runs one as its baseline).
ABI = "ibqos-sim 5"

CBR, POISSON, SATURATE = 0, 1, 2
DEST_SET, DEST_UNIFORM = 0, 1
RUNNING, DONE, DEADLOCK, STALLED = 0, 1, 2, 3
STATUS = {RUNNING: "running", DONE: "done", DEADLOCK: "deadlock", STALLED: "stalled"}
ACCOUNTING = {"byte": 0, "packet": 1}


class VlarbEntry(C.Structure):
    _fields_ = [("vl", C.c_uint8), ("weight", C.c_uint8)]


class Flow(C.Structure):
    _fields_ = [
        ("src", C.c_uint32),
        ("sl", C.c_uint8),
        ("process", C.c_uint8),
        ("klass", C.c_uint16),
        ("pkt_bytes", C.c_uint32),
        ("msg_bytes", C.c_uint32),
        ("rate_gbps", C.c_double),
        ("dest_mode", C.c_uint32),
        ("dest_off", C.c_uint32),
        ("dest_len", C.c_uint32),
    ]


_u8, _u16, _u32, _i32, _f64 = (
    C.POINTER(C.c_uint8),
    C.POINTER(C.c_uint16),
    C.POINTER(C.c_uint32),
    C.POINTER(C.c_int32),
    C.POINTER(C.c_double),
)


class Config(C.Structure):
    _fields_ = [
        ("n_nodes", C.c_uint32),
        ("node_is_switch", _u8),
        ("node_nports", _u32),
        ("node_port_base", _u32),
        ("node_route_off", _u32),
        ("node_sl2vl_off", _u32),
        ("n_ports", C.c_uint32),
        ("port_peer", _i32),
        ("port_op_vls", _u8),
        ("port_rate_gbps", _f64),
        ("port_arb_high_off", _u32),
        ("port_arb_high_len", _u32),
        ("port_arb_low_off", _u32),
        ("port_arb_low_len", _u32),
        ("port_arb_limit", _u8),
        ("arb_entries", C.POINTER(VlarbEntry)),
        ("routes", _u8),
        ("sl2vl_idx", _u16),
        ("sl2vl_rows", _u8),
        ("n_sl2vl_rows", C.c_uint32),
        ("n_endpoints", C.c_uint32),
        ("ep_port", _u32),
        ("n_flows", C.c_uint32),
        ("flows", C.POINTER(Flow)),
        ("n_dests", C.c_uint32),
        ("dests", _u32),
        ("n_classes", C.c_uint32),
        ("buf_credits", C.c_uint32),
        ("mtu", C.c_uint32),
        ("prop_ps", C.c_uint64),
        ("sw_latency_ps", C.c_uint64),
        ("voq", C.c_uint8),
        ("accounting", C.c_uint8),
        ("seed", C.c_uint64),
        ("warmup_ps", C.c_uint64),
        ("end_ps", C.c_uint64),
        ("deadlock_ps", C.c_uint64),
        ("evq", C.c_char_p),
        ("audit", C.c_uint8),
        ("input_reads", C.c_uint8),
        ("pair_sl", _u8),
        ("voq_buffers", C.c_uint8),
    ]


class Latency(C.Structure):
    _fields_ = [
        ("count", C.c_uint64),
        ("mean_ps", C.c_double),
        ("p50_ps", C.c_uint64),
        ("p99_ps", C.c_uint64),
        ("max_ps", C.c_uint64),
    ]


class Group(C.Structure):
    _fields_ = [
        ("rx_pkts", C.c_uint64),
        ("rx_bytes", C.c_uint64),
        ("tx_pkts", C.c_uint64),
        ("tx_bytes", C.c_uint64),
        ("latency", Latency),
        ("net_latency", Latency),
    ]


class Results(C.Structure):
    _fields_ = [
        ("status", C.c_uint32),
        ("now_ps", C.c_uint64),
        ("window_ps", C.c_uint64),
        ("injected", C.c_uint64),
        ("delivered", C.c_uint64),
        ("in_flight", C.c_uint64),
        ("dropped_route", C.c_uint64),
        ("dropped_vl", C.c_uint64),
        ("hops", C.c_uint64),
        ("events", C.c_uint64),
        ("max_pending", C.c_uint64),
        ("last_move_ps", C.c_uint64),
        ("sl", Group * 16),
        ("n_classes", C.c_uint32),
        ("klass", C.POINTER(Group)),
        ("port_vl_bytes", C.POINTER(C.c_uint64)),
        ("port_sl_bytes", C.POINTER(C.c_uint64)),
        ("port_vl_wait_ps", C.POINTER(C.c_uint64)),
        ("ep_rx_bytes", C.POINTER(C.c_uint64)),
        ("ep_tx_bytes", C.POINTER(C.c_uint64)),
        ("witness_len", C.c_uint32),
        ("witness", _u32),
    ]


class Audit(C.Structure):
    _fields_ = [
        ("queued", C.c_uint64),
        ("on_link", C.c_uint64),
        ("credit_errors", C.c_uint64),
        ("queue_errors", C.c_uint64),
        ("read_errors", C.c_uint64),
    ]


# Where a wheel (pip install) puts the core: beside this binding (CMakeLists.txt, SKBUILD).
PACKAGED = Path(__file__).resolve().parent / LIB_NAME


def candidates() -> list[Path]:
    """Where the core may be, in the order looked: IBQOS_SIM_LIB; the installed package (a
    wheel), unless IBQOS_BUILD_DIR names a build to test; the build tree of a checkout (the
    editable install of `make deps`) or `make install`'s library directory."""
    env = os.environ.get("IBQOS_SIM_LIB")
    if env:
        return [Path(env)]
    build = product(f"ci-sim/core/{LIB_NAME}")
    return [build] if "IBQOS_BUILD_DIR" in os.environ else [PACKAGED, build]


def library_path() -> Path:
    found = [p for p in candidates() if p.exists()]
    return found[0] if found else candidates()[-1]


@functools.cache
def load(path: str | None = None) -> C.CDLL:
    p = Path(path) if path else library_path()
    if not p.exists():
        looked = path or " or ".join(str(c) for c in candidates())
        raise ExternalError(
            f"the simulator core {LIB_NAME} is not installed (looked in {looked}): "
            "run 'make build' in a checkout, or reinstall ibqos from a wheel (pip install ibqos)"
        )
    lib = C.CDLL(str(p))
    lib.ibs_create.argtypes = [C.POINTER(Config), C.POINTER(C.c_void_p), C.c_char_p, C.c_size_t]
    lib.ibs_create.restype = C.c_int
    lib.ibs_run.argtypes = [C.c_void_p, C.c_uint64]
    lib.ibs_run.restype = C.c_int
    lib.ibs_results.argtypes = [C.c_void_p]
    lib.ibs_results.restype = C.POINTER(Results)
    lib.ibs_audit.argtypes = [C.c_void_p, C.POINTER(Audit)]
    lib.ibs_audit.restype = C.c_int
    lib.ibs_destroy.argtypes = [C.c_void_p]
    lib.ibs_destroy.restype = None
    lib.ibs_version.restype = C.c_char_p
    have = lib.ibs_version().decode()
    accept = {ABI} | set(filter(None, os.environ.get("IBQOS_SIM_ACCEPT_ABI", "").split(",")))
    if have not in accept:
        raise ExternalError(
            f"{p} is '{have}', this ibqos needs '{ABI}' (the structs it shares with the core differ): run 'make build'"
        )
    return lib
