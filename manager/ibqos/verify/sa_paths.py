"""Ask the SA for the path record of every CA port pair, in one process, over libibmad.

Why not `saquery -p`: a query for all paths returns many records in an RMPP transfer, and
umad2sim (ibsim's umad shim) delivers only its first segment (3 records), so a table query
silently comes back short. One GetPathRecord(SGID, DGID) per pair fits in a single MAD and
works on ibsim and real fabrics alike; doing them all from one process avoids the ~20 ms a
`saquery` process costs per pair.

The querying runs in a child (`python -m ibqos.verify.sa_paths`) because the harness's
LD_PRELOAD must be in place when the process starts. Protocol: stdin lines
`<src port GUID> <dst port GUID>` (hex), stdout lines `<slid> <dlid> <sl>` or
`! <src> <dst>` when the SA has no path.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

from ..errors import ExternalError, ProcessError
from ..fabric.model import Fabric
from ..proc import run_command
from .pathsl import PathSLs

IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS = 0x01, 0x81, 0x03
GID_PREFIX = bytes.fromhex("fe80000000000000")
PR_DLID, PR_SLID, PR_SL = 40, 42, 53              # byte offsets in the PathRecord


class _DrPath(ctypes.Structure):
    _fields_ = [("cnt", ctypes.c_int), ("p", ctypes.c_uint8 * 64),
                ("drslid", ctypes.c_uint16), ("drdlid", ctypes.c_uint16)]


class _PortId(ctypes.Structure):                   # libibmad ib_portid_t
    _fields_ = [("lid", ctypes.c_int), ("drpath", _DrPath), ("grh_present", ctypes.c_int),
                ("gid", ctypes.c_uint8 * 16), ("qp", ctypes.c_uint32), ("qkey", ctypes.c_uint32),
                ("sl", ctypes.c_uint8), ("pkey_idx", ctypes.c_uint)]


def _serve(lines, out) -> int:
    name = ctypes.util.find_library("ibmad") or "libibmad.so.5"
    mad = ctypes.CDLL(name)
    mad.mad_rpc_open_port.restype = ctypes.c_void_p
    mad.mad_rpc_open_port.argtypes = [ctypes.c_char_p, ctypes.c_int,
                                      ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    mad.ib_resolve_smlid_via.argtypes = [ctypes.POINTER(_PortId), ctypes.c_int, ctypes.c_void_p]
    mad.ib_path_query_via.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p,
                                      ctypes.POINTER(_PortId), ctypes.c_void_p]
    mad.mad_rpc_close_port.argtypes = [ctypes.c_void_p]
    classes = (ctypes.c_int * 3)(IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS)
    port = mad.mad_rpc_open_port(None, 0, classes, 3)
    if not port:
        print("cannot open a local umad port", file=sys.stderr)
        return 3
    sm = _PortId()
    if mad.ib_resolve_smlid_via(ctypes.byref(sm), 0, port) < 0 or sm.lid <= 0:
        print("no SM LID on the local port (is a subnet manager running?)", file=sys.stderr)
        return 3
    buf = ctypes.create_string_buffer(256)
    for line in lines:
        parts = line.split()
        if len(parts) != 2:
            continue
        sgid = GID_PREFIX + int(parts[0], 16).to_bytes(8, "big")
        dgid = GID_PREFIX + int(parts[1], 16).to_bytes(8, "big")
        sm.qkey = 0
        if mad.ib_path_query_via(port, sgid, dgid, ctypes.byref(sm), buf) <= 0:
            out.write(f"! {parts[0]} {parts[1]}\n")
            continue
        raw = buf.raw
        out.write(f"{int.from_bytes(raw[PR_SLID:PR_SLID + 2], 'big')} "
                  f"{int.from_bytes(raw[PR_DLID:PR_DLID + 2], 'big')} {raw[PR_SL] & 0xf}\n")
    mad.mad_rpc_close_port(port)
    return 0


def query_path_sls(fabric: Fabric, env: dict[str, str] | None, *, timeout: float = 3600) -> PathSLs:
    """SL of every CA port pair as the SA answers it now (the SM must be running)."""
    ports = sorted(p.guid for n in fabric.cas() for p in n.ports.values() if p.lid and p.guid)
    pairs = "".join(f"{s:x} {d:x}\n" for s in ports for d in ports if s != d)
    try:
        cp = run_command([sys.executable, "-m", "ibqos.verify.sa_paths"], env=env, input=pairs,
                         timeout=timeout)
    except ProcessError as e:
        raise ExternalError(f"SA path record query failed: {e}") from None
    psl = PathSLs(source="SA path records")
    missing = 0
    for line in cp.stdout.splitlines():
        f = line.split()
        if f and f[0] == "!":
            missing += 1
        elif len(f) == 3:
            psl.by_lids[(int(f[0]), int(f[1]))] = int(f[2])
    if missing == len(ports) * (len(ports) - 1) and ports:
        raise ExternalError("the SA answered no path record (is OpenSM running as a daemon?)")
    psl.source = f"SA path records ({len(psl.by_lids)} pairs" + (
        f", {missing} without a path)" if missing else ")")
    return psl


if __name__ == "__main__":
    sys.exit(_serve(sys.stdin, sys.stdout))
