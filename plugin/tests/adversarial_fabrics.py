"""The adversarial fabrics, cabled by hand as an installer would (HandNet, not ibqos_sim's
generator). Each function returns (net, SM's CA, expectation): "routed" for a proper dragonfly
or one dla must route through its damage, "either" where refusing is as good as routing a
detour (neither may leave a credit loop)."""

from __future__ import annotations

from handnet import HandNet

UNITS = (10, 12, 14, 16)


def sw_name(rack: int, unit: int) -> str:
    return f"MF0;sw-r{rack}-u{unit}:SX6036/U1"


def racks(net: HandNet, hosts: list[list[int]], units=UNITS, parallel=()) -> list[list[str]]:
    """One group per rack: its switches cabled all to all (plus the `parallel` extra cables,
    (rack, i, j)), hosts[r][i] single-port CAs on switch i of rack r."""
    groups = []
    for r, counts in enumerate(hosts):
        sws = [net.switch(sw_name(r + 1, u)) for u in units[: len(counts)]]
        for i, a in enumerate(sws):
            for b in sws[i + 1 :]:
                net.cable(a, b)
        for rr, i, j in parallel:
            if rr == r:
                net.cable(sws[i], sws[j])
        groups.append(sws)
    for r, counts in enumerate(hosts):
        for i, n in enumerate(counts):
            for _ in range(n):
                ca = net.hca(f"node{len([k for k in net.kind.values() if k == 'Hca']) + 1:03d} HCA-1")
                net.cable(ca, groups[r][i])
    return groups


def globals_(net: HandNet, groups: list[list[str]], cables) -> None:
    for ra, ia, rb, ib in cables:
        net.cable(groups[ra][ia], groups[rb][ib])


# 5 racks of 4: every rack pair cabled, four pairs twice (one switch twice to the same rack,
# two cables landing on one switch), landing switches picked by hand, not round robin
INSTALLER_HOSTS = [[2, 3, 0, 1], [1, 2, 2, 2], [3, 1, 0, 2], [2, 2, 2, 2], [1, 1, 1, 3]]
INSTALLER_GLOBALS = [
    (0, 0, 1, 2), (0, 3, 1, 0),
    (0, 1, 2, 1), (0, 1, 2, 3),
    (0, 2, 3, 3),
    (0, 0, 4, 1),
    (1, 1, 2, 0),
    (1, 3, 3, 1), (1, 2, 3, 1),
    (1, 0, 4, 0),
    (2, 2, 3, 0),
    (2, 3, 4, 2), (2, 0, 4, 3),
    (3, 2, 4, 3),
]  # fmt: skip


def installer(seed: int = 1, drop=(), hosts=INSTALLER_HOSTS, cables=INSTALLER_GLOBALS):
    net = HandNet(seed)
    groups = racks(net, hosts)
    globals_(net, groups, [c for c in cables if c not in drop])
    # the SM's CA sits on r1-u12: 3 hosts and two global cables
    return net, first_ca_on(net, groups[0][1])


def first_ca_on(net: HandNet, sw: str) -> str:
    return min(n for n, ports in net.links.items() if net.kind[n] == "Hca" and ports[1][0] == sw)


def missing_switch():
    """Rack 5's fourth switch was never installed: its cables went to the other three."""
    hosts = INSTALLER_HOSTS[:4] + [[2, 0, 3]]
    cables = [(a, i, b, 0 if (b, j) == (4, 3) else j) for a, i, b, j in INSTALLER_GLOBALS]
    cables = [(a, i, b, 2 if (a, i, b) == (3, 2, 4) else j) for a, i, b, j in cables]
    return installer(seed=2, hosts=hosts, cables=cables)


def no_direct_pair():
    """Racks 1 and 5 have no cable between them: any route between them crosses a third rack."""
    return installer(seed=3, drop=[(0, 0, 4, 1)])


def chain():
    """Four racks of three in a line (1-2-3-4): racks 1 and 4 are three group hops apart. Not a
    dragonfly dla can route; it must refuse and leave it to the fallback."""
    net = HandNet(4)
    groups = racks(net, [[2, 1, 2], [1, 2, 1], [2, 2, 0], [1, 1, 2]], units=(10, 12, 14))
    globals_(net, groups, [(0, 1, 1, 0), (0, 2, 1, 2), (1, 1, 2, 2), (2, 0, 3, 1), (2, 1, 3, 1)])
    return net, first_ca_on(net, groups[0][0])


def odd_cables():
    """Racks of three, every rack pair cabled, with what installers leave behind: one switch
    cabled to two switches of another rack (a triangle across racks, twice), a second cable
    between two switches of a rack, a cable looped back into the same switch, a switch with
    no hosts, and a two-port HCA cabled to switches of two racks."""
    net = HandNet(5)
    groups = racks(net, [[1, 2, 0], [2, 2, 2], [3, 0, 1], [1, 1, 2]], units=(10, 12, 14), parallel=[(1, 0, 1)])
    globals_(
        net,
        groups,
        [
            (0, 0, 1, 0),
            (0, 0, 1, 1),
            (0, 1, 2, 2),
            (0, 2, 3, 1),
            (1, 2, 2, 0),
            (1, 1, 3, 2),
            (2, 1, 3, 0),
            (2, 1, 3, 2),
        ],
    )
    net.cable(groups[2][0], groups[2][0])  # loopback
    ca = net.hca("node050 HCA-1", ports=2)
    net.cable(ca, groups[1][2])
    net.cable(ca, groups[3][0])
    return net, first_ca_on(net, groups[1][1])


def half_rack():
    """Rack 5 holds two switches of four (half-populated), each cabled to two racks."""
    net = HandNet(6)
    groups = racks(net, [[2, 1, 2, 1], [1, 2, 0, 2], [2, 2, 1, 1], [1, 1, 2, 2], [3, 2]])
    globals_(
        net,
        groups,
        [(0, 0, 1, 1), (0, 1, 2, 2), (0, 2, 3, 3), (1, 0, 2, 3), (1, 2, 3, 0), (2, 0, 3, 2),
         (4, 0, 0, 3), (4, 0, 1, 3), (4, 1, 2, 1), (4, 1, 3, 1)],
    )  # fmt: skip
    return net, first_ca_on(net, groups[4][0])


def hub_switches():
    """Every rack's global cables all on its first switch (two of them to one rack), plus a
    second cable between two switches of different racks."""
    net = HandNet(7)
    groups = racks(net, [[0, 3, 2, 3], [0, 2, 3, 2], [0, 3, 3, 1], [0, 2, 2, 2]])
    globals_(
        net, groups, [(0, 0, 1, 0), (0, 0, 1, 0), (0, 0, 2, 0), (0, 0, 3, 0), (1, 0, 2, 0), (1, 0, 3, 0), (2, 0, 3, 0)]
    )
    ca = net.hca("node099 HCA-1", ports=2)  # the SM's HCA: two ports on one hub switch and a leaf
    net.cable(ca, groups[0][0])
    net.cable(ca, groups[0][2])
    return net, ca


def pairs_of_two():
    """Racks of two switches (a = 2: every cable is a 2-clique), six racks, pairs of racks
    cabled once or twice."""
    net = HandNet(8)
    groups = racks(net, [[2, 1], [1, 2], [2, 2], [0, 3], [1, 1], [2, 0]], units=(10, 12))
    cables = [(x, (x + y) % 2, y, (x * y) % 2) for x in range(6) for y in range(x + 1, 6)]
    globals_(net, groups, cables + [(0, 1, 3, 1), (2, 0, 5, 1)])
    return net, first_ca_on(net, groups[0][0])


def spur():
    """Rack 5 is cabled to rack 1 only (twice): every route from it crosses rack 1."""
    net = HandNet(9)
    groups = racks(net, [[1, 2, 1], [2, 1, 1], [1, 1, 2], [1, 2, 1], [2, 2, 0]], units=(10, 12, 14))
    globals_(
        net,
        groups,
        [
            (0, 0, 1, 0),
            (0, 1, 2, 1),
            (0, 2, 3, 2),
            (1, 1, 2, 2),
            (1, 2, 3, 0),
            (2, 0, 3, 1),
            (4, 0, 0, 1),
            (4, 1, 0, 2),
        ],
    )
    return net, first_ca_on(net, groups[4][0])
