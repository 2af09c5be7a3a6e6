"""A fabric.json checked before it becomes a model: every field of the right type and range,
and the parts agreeing (a link's far end exists and links back, an LFT names ports the switch
has, no LID owned twice). The verifier and the simulator index arrays by these numbers, so a
bad one would fail deep inside them (or ask for 400 GiB); here it is one InputError naming
the file, the line and the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..docfile import JsonDoc
from ..vls import DATA_VL_COUNTS

MAX_PORTS = 254  # IBA: NumPorts of a switch (port numbers 1-254; the one owner of the limit)
MAX_UCAST_LID = 0xBFFF  # 0xC000 and up are multicast LIDs (IBA 4.1.1): no port's
NO_ROUTE = 255
VL_COUNTS = (0, *DATA_VL_COUNTS)  # 0: not read
MTUS = (0, 256, 512, 1024, 2048, 4096)
KINDS = ("switch", "ca", "router")


def _int(v: Any) -> bool:
    return type(v) is int


def _guid(w: JsonDoc, v: Any, *loc: str | int) -> int:
    if not isinstance(v, str):
        raise w.error(f"want a GUID '0x…', got {v!r:.40}", *loc)
    try:
        g = int(v, 16)
    except ValueError:
        raise w.error(f"{v!r:.40} is not a hex GUID", *loc) from None
    if not 0 <= g < 1 << 64:
        raise w.error(f"{v!r:.40} is longer than 64 bits", *loc)
    return g


def unicast_lid(v: int) -> int:
    """A port's LID, the one rule and its wording (the model's Port.lid): 70000 said 'Input
    should be less than or equal to 65535' (pydantic) and 49153 'want an integer in 0..49151'."""
    if not 0 <= v <= MAX_UCAST_LID:
        raise ValueError(f"want a unicast LID 1..0x{MAX_UCAST_LID:X} (0: none assigned), got {v}")
    return v


def _ranged(w: JsonDoc, v: Any, lo: int, hi: int, *loc: str | int, allowed: tuple[int, ...] = ()) -> int:
    if not _int(v) or not (v in allowed if allowed else lo <= v <= hi):
        want = ", ".join(map(str, allowed)) if allowed else f"{lo}..{hi}"
        raise w.error(f"want an integer in {want}, got {v!r:.40}", *loc)
    return int(v)


def check_fabric_doc(doc: Any, path: str | Path, text: str | None = None) -> None:
    """Raise the first problem of a fabric.json document (already parsed) as an InputError."""
    w = JsonDoc(path, text)
    if not isinstance(doc, dict):
        raise w.error(f"want an object, got {type(doc).__name__}")
    nodes = doc.get("nodes")
    if not isinstance(nodes, list):
        raise w.error("want a list of nodes", "nodes")
    if not isinstance(doc.get("source", ""), str):
        raise w.error("want a string", "source")
    ports_of: dict[int, dict[int, Any]] = {}
    lid_owner: dict[int, str] = {}
    guid_owner: dict[int, str] = {}
    for i, nd in enumerate(nodes):
        guid, ports = _node(w, nd, i, lid_owner, guid_owner)
        if guid in ports_of:
            raise w.error(f"node GUID 0x{guid:016x} listed twice", "nodes", i, "guid")
        ports_of[guid] = ports
    _links(w, nodes, ports_of)
    if any(nd.get("sl2vl") for nd in nodes):
        _sl2vl_complete(w, nodes)


def _node(
    w: JsonDoc, nd: Any, i: int, lid_owner: dict[int, str], guid_owner: dict[int, str]
) -> tuple[int, dict[int, Any]]:
    at: tuple[str | int, ...] = ("nodes", i)
    if not isinstance(nd, dict):
        raise w.error(f"want a node object, got {nd!r:.40}", *at)
    for key in ("guid", "kind", "desc", "nports", "ports"):
        if key not in nd:
            raise w.error(f"a node needs {key}", *at, key)
    guid = _guid(w, nd["guid"], *at, "guid")
    kind = nd["kind"]
    if kind not in KINDS:
        raise w.error(f"want one of {', '.join(KINDS)}, got {kind!r:.40}", *at, "kind")
    if not isinstance(nd["desc"], str):
        raise w.error("want a string", *at, "desc")
    nports = _ranged(w, nd["nports"], 1, MAX_PORTS, *at, "nports")
    if not isinstance(nd["ports"], list):
        raise w.error("want a list of ports", *at, "ports")
    ports: dict[int, Any] = {}
    for k, pd in enumerate(nd["ports"]):
        num = _port(w, pd, kind, nports, (*at, "ports", k), lid_owner, guid_owner, f"0x{guid:016x}")
        if num in ports:
            raise w.error(f"port {num} listed twice", *at, "ports", k, "num")
        ports[num] = pd
    _lft(w, nd.get("lft", []), kind, nports, at)
    _sl2vl(w, nd.get("sl2vl", []), nports, at)
    return guid, ports


def _port(
    w: JsonDoc,
    pd: Any,
    kind: str,
    nports: int,
    at: tuple[str | int, ...],
    lid_owner: dict[int, str],
    guid_owner: dict[int, str],
    node: str,
) -> int:
    if not isinstance(pd, dict):
        raise w.error(f"want a port object, got {pd!r:.40}", *at)
    for key in ("num", "guid", "lid"):
        if key not in pd:
            raise w.error(f"a port needs {key}", *at, key)
    num = _ranged(w, pd["num"], 0 if kind == "switch" else 1, nports, *at, "num")
    pguid = _guid(w, pd["guid"], *at, "guid")
    if pguid:  # 0: a switch's external port, which has no GUID of its own
        # the SM addresses a port by its GUID (SA PathRecords, partitions, QoS port groups):
        # IBA gives every port its own, unique in the subnet
        if pguid in guid_owner:
            raise w.error(f"port GUID 0x{pguid:016x} is also {guid_owner[pguid]}'s", *at, "guid")
        guid_owner[pguid] = f"{node} port {num}"
    lid = int(pd["lid"])  # its range is the model's (unicast_lid), checked before this
    lmc = _ranged(w, pd.get("lmc", 0), 0, 7, *at, "lmc")
    if lid:
        for k in range(lid, lid + (1 << lmc)):
            if k in lid_owner:
                raise w.error(f"LID {k} is also {lid_owner[k]}'s", *at, "lid")
            lid_owner[k] = f"{node} port {num}"
    remote = pd.get("remote")
    if remote is not None:
        if not (isinstance(remote, list) and len(remote) == 2):
            raise w.error(f"want [peer node GUID, peer port], got {remote!r:.40}", *at, "remote")
        _guid(w, remote[0], *at, "remote", 0)
        _ranged(w, remote[1], 1, MAX_PORTS, *at, "remote", 1)
    for key in ("width", "speed"):
        if not isinstance(pd.get(key, ""), str):
            raise w.error("want a string", *at, key)
    for key in ("vl_cap", "op_vls"):
        _ranged(w, pd.get(key, 0), 0, 15, *at, key, allowed=VL_COUNTS)
    _ranged(w, pd.get("mtu", 0), 0, 4096, *at, "mtu", allowed=MTUS)
    _ranged(w, pd.get("mtu_cap", 0), 0, 4096, *at, "mtu_cap", allowed=MTUS)
    if pd.get("vlarb") is not None:
        _vlarb(w, pd["vlarb"], (*at, "vlarb"))
    return num


def _vlarb(w: JsonDoc, va: Any, at: tuple[str | int, ...]) -> None:
    if not isinstance(va, dict):
        raise w.error(f"want an object or null, got {va!r:.40}", *at)
    for key in ("high", "low", "high_limit", "high_cap", "low_cap"):
        if key not in va:
            raise w.error(f"VLArb needs {key}", *at, key)
    _ranged(w, va["high_limit"], 0, 255, *at, "high_limit")
    for which in ("high", "low"):
        cap = _ranged(w, va[f"{which}_cap"], 0, 64, *at, f"{which}_cap")
        entries = va[which]
        if not isinstance(entries, list):
            raise w.error("want a list of [VL, weight]", *at, which)
        if len(entries) > cap:
            raise w.error(f"{len(entries)} entries, more than {which}_cap {cap}", *at, which)
        for n, e in enumerate(entries):
            if not (isinstance(e, list) and len(e) == 2):
                raise w.error(f"want [VL, weight], got {e!r:.40}", *at, which, n)
            _ranged(w, e[0], 0, 15, *at, which, n, 0)
            _ranged(w, e[1], 0, 255, *at, which, n, 1)


def _lft(w: JsonDoc, lft: Any, kind: str, nports: int, at: tuple[str | int, ...]) -> None:
    if not isinstance(lft, list):
        raise w.error("want a list of output ports, indexed by LID", *at, "lft")
    if kind != "switch" and lft:
        raise w.error("only a switch has an LFT", *at, "lft")
    if len(lft) > MAX_UCAST_LID + 1:
        raise w.error(f"{len(lft)} entries: unicast LIDs end at 0x{MAX_UCAST_LID:X}", *at, "lft")
    # Tens of millions of entries in a large fabric: check the few distinct values, then find
    # the first bad one for the message.
    try:
        values = set(lft)
    except TypeError:
        values = {None}
    bad = {v for v in values if not (_int(v) and (0 <= v <= nports or v == NO_ROUTE))}
    if bad:
        k = next(k for k, v in enumerate(lft) if not (_int(v) and (0 <= v <= nports or v == NO_ROUTE)))
        raise w.error(
            f"LID {k} routed to {lft[k]!r:.40}: the switch has ports 0..{nports} (255: no route)", *at, "lft", k
        )


def _sl2vl(w: JsonDoc, rows: Any, nports: int, at: tuple[str | int, ...]) -> None:
    if not isinstance(rows, list):
        raise w.error("want a list of [in port, out port, 16 hex VLs]", *at, "sl2vl")
    for k, row in enumerate(rows):
        if not (isinstance(row, list) and len(row) == 3):
            raise w.error(f"want [in port, out port, 16 hex VLs], got {row!r:.40}", *at, "sl2vl", k)
        _ranged(w, row[0], 0, nports, *at, "sl2vl", k, 0)
        _ranged(w, row[1], 0, nports, *at, "sl2vl", k, 1)
        s = row[2]
        if not (isinstance(s, str) and len(s) == 16 and all(c in "0123456789abcdefABCDEF" for c in s)):
            raise w.error(f"want 16 hex digits (the VL of SL 0..15), got {s!r:.40}", *at, "sl2vl", k, 2)


def _links(w: JsonDoc, nodes: list[Any], ports_of: dict[int, dict[int, Any]]) -> None:
    """Every link's far end is a listed port that links back."""
    for i, nd in enumerate(nodes):
        guid = int(nd["guid"], 16)
        for k, pd in enumerate(nd["ports"]):
            if pd.get("remote") is None:
                continue
            peer, pport = int(pd["remote"][0], 16), pd["remote"][1]
            at = ("nodes", i, "ports", k, "remote")
            if peer not in ports_of:
                raise w.error(f"links to node {pd['remote'][0]}, which is not in the file", *at)
            back = ports_of[peer].get(pport)
            if back is None:
                raise w.error(f"links to port {pport} of {pd['remote'][0]}, which that node does not list", *at)
            r = back.get("remote")
            if r is None or int(r[0], 16) != guid or r[1] != pd["num"]:
                raise w.error(
                    f"links to {pd['remote'][0]} port {pport}, which links to {r!r:.60} instead: "
                    "a link is listed on both ends",
                    *at,
                )


def _sl2vl_complete(w: JsonDoc, nodes: list[Any]) -> None:
    """A model with SL2VL tables has one for every (in, out) pair of a switch's linked ports
    (the rule fabric/index.py applies; here it is named with the file and line)."""
    for i, nd in enumerate(nodes):
        if nd["kind"] != "switch":
            continue
        have = {(row[0], row[1]) for row in nd.get("sl2vl", [])}
        linked = sorted(pd["num"] for pd in nd["ports"] if pd.get("remote") is not None and pd["num"] != 0)
        for a in linked:
            for b in linked:
                if a != b and (a, b) not in have:
                    raise w.error(
                        f"switch {nd['desc'] or nd['guid']}: no SL2VL row for in port {a} out port {b} "
                        "(the model has tables elsewhere)",
                        "nodes",
                        i,
                        "sl2vl",
                    )
