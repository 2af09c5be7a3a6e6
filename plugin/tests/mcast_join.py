"""Join end ports to OpenSM's IPoIB broadcast group, as IPoIB would, through the SA.

Run under the harness's environment (libumad2sim preloaded), one process for all ports:
    python mcast_join.py SM_LID PORT_GUID...
Each join is an SA MCMemberRecord Set (IBA 15.2.5.17) from this process's port, a proxy join
for the others (OpenSM 3.3.23 allows it when the ports share a P_Key). OpenSM then builds the
group's spanning tree (osm_mcast_mgr.c) and programs the switches' MFTs. Exits 1 naming the
first port the SA refused."""

from __future__ import annotations

import ctypes
import struct
import sys

SA_CLASS, SA_VERSION, SA_QP, SA_QKEY = 3, 2, 1, 0x80010000
METHOD_SET, ATTR_MCMEMBER = 0x02, 0x0038
MAD_SIZE = 256
# IPoIB IPv4 broadcast group of the default partition (OpenSM's osm_ipoib_broadcast_mgid)
BROADCAST_MGID = bytes.fromhex("ff12401bffff000000000000ffffffff")
SUBNET_PREFIX = 0xFE80000000000000
COMP_MGID, COMP_PORT_GID, COMP_JOIN_STATE = 1 << 0, 1 << 1, 1 << 16
FULL_MEMBER = 1


def join_mad(tid: int, port_guid: int) -> bytes:
    head = struct.pack(">BBBBHHQHHI", 1, SA_CLASS, SA_VERSION, METHOD_SET, 0, 0, tid, ATTR_MCMEMBER, 0, 0)
    rmpp = bytes(12)  # not an RMPP transfer
    sa = rmpp + struct.pack(">QHHQ", 0, 64 // 8, 0, COMP_MGID | COMP_PORT_GID | COMP_JOIN_STATE)
    rec = BROADCAST_MGID + struct.pack(">QQ", SUBNET_PREFIX, port_guid)
    rec += bytes(16) + bytes([FULL_MEMBER]) + bytes(64 - 16 - 16 - 16 - 1)
    return (head + sa + rec).ljust(MAD_SIZE, b"\0")


def main(argv: list[str]) -> int:
    sm_lid, guids = int(argv[0], 0), [int(g, 0) for g in argv[1:]]
    umad = ctypes.CDLL("libibumad.so.3")
    umad.umad_get_mad.restype = ctypes.c_void_p
    if umad.umad_init() < 0:
        print("mcast_join: umad_init failed", file=sys.stderr)
        return 2
    fd = umad.umad_open_port(None, 0)
    agent = umad.umad_register(fd, SA_CLASS, SA_VERSION, 0, None)
    if fd < 0 or agent < 0:
        print("mcast_join: cannot open the port or register the SA agent", file=sys.stderr)
        return 2
    size = umad.umad_size()
    buf = ctypes.create_string_buffer(size + MAD_SIZE)
    for n, guid in enumerate(guids, start=1):
        ctypes.memset(buf, 0, size + MAD_SIZE)
        umad.umad_set_addr(buf, sm_lid, SA_QP, 0, SA_QKEY)
        ctypes.memmove(umad.umad_get_mad(buf), join_mad(n, guid), MAD_SIZE)
        if umad.umad_send(fd, agent, buf, MAD_SIZE, 2000, 3) < 0:
            print(f"mcast_join: cannot send the join of {guid:#018x}", file=sys.stderr)
            return 1
        length = ctypes.c_int(MAD_SIZE)
        if umad.umad_recv(fd, buf, ctypes.byref(length), 5000) < 0 or umad.umad_status(buf):
            print(f"mcast_join: no answer to the join of {guid:#018x}", file=sys.stderr)
            return 1
        mad = ctypes.string_at(umad.umad_get_mad(buf), MAD_SIZE)
        status = struct.unpack_from(">H", mad, 4)[0]
        if status:
            print(f"mcast_join: SA refused the join of {guid:#018x}: status {status:#06x}", file=sys.stderr)
            return 1
    umad.umad_unregister(fd, agent)
    umad.umad_close_port(fd)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
