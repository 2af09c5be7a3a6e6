"""Ask the SA for the path record of every CA port pair, in one process, over libibumad.

Why not `saquery -p`: a query for all paths returns many records in an RMPP transfer, and
umad2sim (ibsim's umad shim) delivers only its first segment (3 records), so a table query
silently comes back short. One GetPathRecord(SGID, DGID) per pair fits in a single MAD and
works on ibsim and real fabrics alike; doing them all from one process avoids the ~20 ms a
`saquery` process costs per pair. The SM LID comes from libibmad; the queries go out over
libibumad with a window of them in flight, matched to answers by transaction ID.

The querying runs in a child (`python -m ibqos.verify.sa_paths`) because the harness's
LD_PRELOAD must be in place when the process starts. Protocol: stdin lines
`<src port GUID> <dst port GUID>` (hex), stdout lines `<slid> <dlid> <sl>` or
`! <src> <dst>` when the SA has no path. A line may add `<service ID> <P_Key>` (hex, `-` for
none), which the query carries as QoS matching keys; its answer then ends with the line's
index (0-based), since one pair may be asked with several keys.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import tempfile
from collections.abc import Iterable, Sequence
from typing import TextIO

from ..errors import ExternalError, ProcessError
from ..fabric.local_port import LocalPort
from ..fabric.model import Fabric
from ..proc import run_command
from .pathsl import PathSLs

IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS = 0x01, 0x81, 0x03
GID_PREFIX = bytes.fromhex("fe80000000000000")
PR_DLID, PR_SLID, PR_PKEY, PR_SL = 40, 42, 50, 53  # byte offsets in the PathRecord
CM_SERVICE_ID, CM_DGID, CM_SGID, CM_PKEY = 0b11, 1 << 2, 1 << 3, 1 << 13  # component mask


class _DrPath(ctypes.Structure):
    _fields_ = [
        ("cnt", ctypes.c_int),
        ("p", ctypes.c_uint8 * 64),
        ("drslid", ctypes.c_uint16),
        ("drdlid", ctypes.c_uint16),
    ]


class _PortId(ctypes.Structure):  # libibmad ib_portid_t
    _fields_ = [
        ("lid", ctypes.c_int),
        ("drpath", _DrPath),
        ("grh_present", ctypes.c_int),
        ("gid", ctypes.c_uint8 * 16),
        ("qp", ctypes.c_uint32),
        ("qkey", ctypes.c_uint32),
        ("sl", ctypes.c_uint8),
        ("pkey_idx", ctypes.c_uint),
    ]


WINDOW = 16  # queries in flight; umad2sim stalls with queues deeper than ~20
RECV_TIMEOUT_MS = 2000
RETRIES = 3


def _get_path_record_mad(
    tid: int, sgid: bytes, dgid: bytes, service_id: int | None = None, pkey: int | None = None
) -> bytes:
    """SubnAdmGet(PathRecord) with component mask SGID | DGID, plus ServiceID and P_Key when
    given (OpenSM's QoS match rules look at a key only when the mask carries it)."""
    mad = bytearray(256)
    mad[0:4] = bytes([1, IB_SA_CLASS, 2, 0x01])  # base/class version, Get
    mad[8:16] = tid.to_bytes(8, "big")
    mad[16:18] = (0x0035).to_bytes(2, "big")  # PathRecord
    mask = CM_DGID | CM_SGID
    if service_id is not None:
        mask |= CM_SERVICE_ID
        mad[56 : 56 + 8] = service_id.to_bytes(8, "big")
    if pkey is not None:
        mask |= CM_PKEY
        mad[56 + PR_PKEY : 56 + PR_PKEY + 2] = pkey.to_bytes(2, "big")
    mad[48:56] = mask.to_bytes(8, "big")
    mad[56 + 8 : 56 + 24] = dgid
    mad[56 + 24 : 56 + 40] = sgid
    return bytes(mad)


def _serve(lines: Iterable[str], out: TextIO, ca: str | None = None, ca_port: int = 0) -> int:
    mad = ctypes.CDLL(ctypes.util.find_library("ibmad") or "libibmad.so.5")
    umad = ctypes.CDLL(ctypes.util.find_library("ibumad") or "libibumad.so.3")
    mad.mad_rpc_open_port.restype = ctypes.c_void_p
    mad.mad_rpc_open_port.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    mad.ib_resolve_smlid_via.argtypes = [ctypes.POINTER(_PortId), ctypes.c_int, ctypes.c_void_p]
    mad.mad_rpc_portid.argtypes = [ctypes.c_void_p]
    mad.mad_rpc_class_agent.argtypes = [ctypes.c_void_p, ctypes.c_int]
    mad.mad_rpc_close_port.argtypes = [ctypes.c_void_p]
    umad.umad_send.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    umad.umad_recv.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    umad.umad_set_addr.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    classes = (ctypes.c_int * 3)(IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS)
    port = mad.mad_rpc_open_port(ca.encode() if ca else None, ca_port, classes, 3)
    if not port:
        print("cannot open a local umad port", file=sys.stderr)
        return 3
    sm = _PortId()
    if mad.ib_resolve_smlid_via(ctypes.byref(sm), 0, port) < 0 or sm.lid <= 0:
        print("no SM LID on the local port (is a subnet manager running?)", file=sys.stderr)
        return 3
    fd, agent = mad.mad_rpc_portid(port), mad.mad_rpc_class_agent(port, IB_SA_CLASS)
    hdr = umad.umad_size()
    sbuf = ctypes.create_string_buffer(hdr + 256)
    rbuf = ctypes.create_string_buffer(hdr + 256)
    length = ctypes.c_int()

    fields = [ln.split() for ln in lines if ln.strip()]
    todo = [_request(f) for f in fields]
    pending: dict[int, tuple[int, int]] = {}  # tid -> (index, tries)
    next_pair, tid = 0, 0x5A000000

    def send(tid: int, i: int) -> None:
        src, dst, sid, pkey = todo[i]
        ctypes.memset(sbuf, 0, hdr)
        umad.umad_set_addr(sbuf, sm.lid, 1, 0, 0x80010000)
        ctypes.memmove(
            ctypes.addressof(sbuf) + hdr,
            _get_path_record_mad(
                tid, GID_PREFIX + src.to_bytes(8, "big"), GID_PREFIX + dst.to_bytes(8, "big"), sid, pkey
            ),
            256,
        )
        if umad.umad_send(fd, agent, sbuf, 256, 0, 0) < 0:
            raise OSError("umad_send failed")

    def tag(i: int) -> str:
        return f" {i}" if len(fields[i]) > 2 else ""

    while next_pair < len(todo) or pending:
        while next_pair < len(todo) and len(pending) < WINDOW:
            tid = (tid + 1) & 0xFFFFFFFF
            pending[tid] = (next_pair, 0)
            send(tid, next_pair)
            next_pair += 1
        length.value = 256
        if umad.umad_recv(fd, rbuf, ctypes.byref(length), RECV_TIMEOUT_MS) < 0:
            for t, (i, tries) in list(pending.items()):  # lost: ask again, or give up
                del pending[t]
                if tries + 1 >= RETRIES:
                    out.write(f"! {todo[i][0]:x} {todo[i][1]:x}{tag(i)}\n")
                    continue
                tid = (tid + 1) & 0xFFFFFFFF
                pending[tid] = (i, tries + 1)
                send(tid, i)
            continue
        raw = rbuf.raw[hdr : hdr + 256]
        t = int.from_bytes(raw[12:16], "big")
        if t not in pending or raw[1] != IB_SA_CLASS:
            continue
        i, _ = pending.pop(t)
        status = int.from_bytes(raw[4:6], "big")
        if status & 0x7FFF:
            out.write(f"! {todo[i][0]:x} {todo[i][1]:x}{tag(i)}\n")
            continue
        pr = raw[56 : 56 + 64]
        out.write(
            f"{int.from_bytes(pr[PR_SLID : PR_SLID + 2], 'big')} "
            f"{int.from_bytes(pr[PR_DLID : PR_DLID + 2], 'big')} {pr[PR_SL] & 0xF}{tag(i)}\n"
        )
    mad.mad_rpc_close_port(port)
    return 0


def _child(at: LocalPort | None) -> list[str]:
    """The querying child's command line; its arguments name the local port (CA, number)."""
    return [sys.executable, "-m", "ibqos.verify.sa_paths", *((at.ca, str(at.port)) if at else ())]


def _request(f: list[str]) -> tuple[int, int, int | None, int | None]:
    key = [None if x == "-" else int(x, 16) for x in f[2:4]] + [None, None]
    return int(f[0], 16), int(f[1], 16), key[0], key[1]


def query_path_sl_keys(
    queries: Sequence[tuple[int, int, int | None, int | None]],
    env: dict[str, str] | None,
    *,
    timeout: float = 600,
    at: LocalPort | None = None,
) -> list[int | None]:
    """SL the SA answers for each (src port GUID, dst port GUID, service ID or None, P_Key or
    None), in order; None where it has no path (e.g. the ports share no such P_Key)."""
    text = "".join(
        f"{s:x} {d:x} {'-' if sid is None else f'{sid:x}'} {'-' if pk is None else f'{pk:x}'}\n"
        for s, d, sid, pk in queries
    )
    try:
        with tempfile.TemporaryDirectory(prefix="ibqos-sa-") as cwd:
            cp = run_command(_child(at), env=env, input=text, timeout=timeout, cwd=cwd)
    except ProcessError as e:
        raise ExternalError(f"SA path record query failed: {e}") from e
    sls: list[int | None] = [None] * len(queries)
    for line in cp.stdout.splitlines():
        f = line.split()
        if len(f) == 4 and f[0] != "!":
            sls[int(f[3])] = int(f[2])
    return sls


def query_path_sls(
    fabric: Fabric, env: dict[str, str] | None, *, timeout: float = 3600, at: LocalPort | None = None
) -> PathSLs:
    """SL of every CA port pair as the SA of `at`'s subnet answers it now (the SM must run)."""
    ports = sorted(p.guid for n in fabric.cas() for p in n.ports.values() if p.lid and p.guid)
    pairs = "".join(f"{s:x} {d:x}\n" for s in ports for d in ports if s != d)
    try:
        # umad2sim writes a fake sysfs (sys-<pid>/) into the client's working directory.
        with tempfile.TemporaryDirectory(prefix="ibqos-sa-") as cwd:
            cp = run_command(_child(at), env=env, input=pairs, timeout=timeout, cwd=cwd)
    except ProcessError as e:
        raise ExternalError(f"SA path record query failed: {e}") from e
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
    psl.source = f"SA path records ({len(psl.by_lids)} pairs" + (f", {missing} without a path)" if missing else ")")
    return psl


if __name__ == "__main__":
    where = sys.argv[1:3]  # CA PORT (_child), else libibumad's first port
    sys.exit(_serve(sys.stdin, sys.stdout, where[0], int(where[1])) if where else _serve(sys.stdin, sys.stdout))
