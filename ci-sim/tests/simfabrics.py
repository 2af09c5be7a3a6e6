"""Routed fabric models for simulator tests, built in Python (no OpenSM).

- star(): one switch and n CAs, every port with the same VLArb tables (seed 002 two-node method).
- dragonfly_dla(): the generator's dragonfly routed by an independent reference of seed 003's
  DLA, written from the paper (/work/shared/seeds/003_*), not from the plugin: Fig. 4's
  minimal routing for the LFTs and, with vls=2, Fig. 8's SL2VL (VL 1 from a global channel into
  a local one, else VL 0); with vls=1 every SL stays on VL 0 (a credit loop).
The routes here are test fixtures (the simulator itself only reads LFTs). Groups are the
generator's labels, not a discovery, so these fabrics do not depend on dla's group rules.
"""

from __future__ import annotations

from ibqos.arbiter import ArbTable
from ibqos.fabric.model import NO_ROUTE, Fabric, Node, Port
from ibqos_sim.harness.topology import dragonfly


# Seed 002 Table 1: VL0 on even entries, VL1/VL2 alternating on odd ones; SL3 alone in low.
def config_a() -> ArbTable:
    hi, n = [], [0, 0, 0]
    for i in range(64):
        if i % 2 == 0:
            hi.append((0, 9 if n[0] < 8 else 8))
            n[0] += 1
        elif i % 4 == 1:
            hi.append((1, 10 if n[1] < 14 else 9))
            n[1] += 1
        else:
            hi.append((2, 7 if n[2] < 10 else 6))
            n[2] += 1
    return ArbTable(hi, [(3, 6)], 1, 64, 64)


def config_b() -> ArbTable:
    hi = [(0, 22) if i % 2 == 0 else (1, 27) if i % 4 == 1 else (2, 18) for i in range(64)]
    return ArbTable(hi, [(3, 2)], 1, 64, 64)


IDENTITY4 = tuple(list(range(4)) + [0] * 12)


def star(
    ncas: int = 2, vlarb: ArbTable | None = None, vls: int = 4, sl2vl=IDENTITY4, ca_vlarb: ArbTable | None = None
) -> Fabric:
    f = Fabric(source="test:star")
    sw = Node(guid=0x100, kind="switch", desc="sw0", nports=ncas)
    sw.ports[0] = Port(num=0, guid=0x100, lid=1)
    f.nodes[sw.guid] = sw
    for i in range(ncas):
        ca = Node(guid=0x200 + i, kind="ca", desc=f"ca{i}", nports=1)
        ca.ports[1] = Port(
            num=1, guid=0x200 + i, lid=2 + i, remote=(sw.guid, i + 1), op_vls=vls, vlarb=ca_vlarb or vlarb
        )
        sw.ports[i + 1] = Port(num=i + 1, remote=(ca.guid, 1), op_vls=vls, vlarb=vlarb)
        ca.sl2vl[(0, 1)] = tuple(sl2vl)
        f.nodes[ca.guid] = ca
    sw.lft = [NO_ROUTE, 0] + [i + 1 for i in range(ncas)]
    for i in range(ncas + 1):
        for o in range(1, ncas + 1):
            sw.sl2vl[(i, o)] = tuple(sl2vl)
    return f


# PLR0912: Fig. 4, rule by rule
def dragonfly_dla(a: int = 4, p: int = 2, h: int = 2, vls: int = 2) -> Fabric:  # noqa: PLR0912
    """Seed 003 Fig. 4, per switch S and destination switch S_d (groups G_s, G_d):
    G_s != G_d and S not connected to G_d: route to the switch S_i of G_s that holds the
    global channel to G_d; G_s != G_d: take that global channel (to S_k in G_d); same group,
    S != S_d: the local channel to S_d; S == S_d: the end node's terminal port. Where a group
    pair has several global channels the paper leaves the choice open: here the first one
    (lowest switch GUID, then lowest port). SL2VL is Fig. 8 (see the module docstring)."""
    t = dragonfly(a, p, h)
    f = t.to_fabric()
    group = {}
    names = {n.desc: n.guid for n in f.nodes.values()}
    for spec in t.nodes.values():
        group[names[spec.name]] = spec.group
    lid = 1
    for n in sorted(f.nodes.values(), key=lambda n: n.guid):
        if n.kind == "switch":
            n.ports[0] = Port(num=0, guid=n.guid, lid=lid)
            lid += 1
    for n in sorted(f.nodes.values(), key=lambda n: n.guid):
        if n.kind == "ca":
            n.ports[1].lid = lid
            n.ports[1].guid = n.guid
            lid += 1
    switches = [n for n in f.nodes.values() if n.kind == "switch"]
    # per switch: local port to each group member, global ports by remote group
    local, glob = {}, {}
    for s in switches:
        for num, port in s.ports.items():
            if not port.remote or f.nodes[port.remote[0]].kind != "switch":
                continue
            peer = port.remote[0]
            if group[peer] == group[s.guid]:
                local[(s.guid, peer)] = num
            else:
                glob.setdefault((s.guid, group[peer]), []).append(num)
    gateway = {}  # (group, remote group) -> switch holding the first global link
    for (sg, rg), nums in sorted(glob.items()):
        gateway.setdefault((group[sg], rg), (sg, min(nums)))
    for s in switches:
        s.lft = [NO_ROUTE] * lid
        s.lft[s.ports[0].lid] = 0
        for ca in f.cas():
            dsw, dport = ca.ports[1].remote
            L = ca.ports[1].lid
            if dsw == s.guid:
                s.lft[L] = dport
            elif group[dsw] == group[s.guid]:
                s.lft[L] = local[(s.guid, dsw)]
            else:
                gsw, gport = gateway[(group[s.guid], group[dsw])]
                s.lft[L] = gport if gsw == s.guid else local[(s.guid, gsw)]
    # SL2VL, seed 003 Fig. 8: VL 1 iff in-port is a global channel and out-port a local one;
    # VLArb: one round-robin table over the VLs
    arb = ArbTable([(v, 1) for v in range(vls)], [], 255, 8, 8) if vls > 1 else None
    for s in switches:
        for i, pi in s.ports.items():
            for o, po in s.ports.items():
                if o == 0 or not po.remote:
                    continue
                vl = 0
                if vls > 1 and pi.remote and po.remote:
                    in_global = f.nodes[pi.remote[0]].kind == "switch" and group[pi.remote[0]] != group[s.guid]
                    out_local = f.nodes[po.remote[0]].kind == "switch" and group[po.remote[0]] == group[s.guid]
                    vl = 1 if in_global and out_local else 0
                s.sl2vl[(i, o)] = (vl,) * 16
        for port in s.ports.values():
            if port.remote:
                port.op_vls, port.vlarb = vls, arb
    for ca in f.cas():
        ca.sl2vl[(0, 1)] = (0,) * 16
        ca.ports[1].op_vls, ca.ports[1].vlarb = vls, arb
    return f
