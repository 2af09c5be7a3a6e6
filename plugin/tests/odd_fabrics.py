"""Fabrics neither ibqos_sim's generators nor adversarial_fabrics.py draw, cabled by hand
(HandNet): one switch, two switches, a ring and a torus, a dragonfly with a group of switches
without CAs, CAs with both ports on one switch, a router, a CA on a switch's highest port with
the ports below it empty, node descriptions with quotes and non-ASCII bytes, a switch port
cabled to itself, a switch cabled to the SM's switch only. Each function returns (net, the
SM's CA)."""

from __future__ import annotations

from handnet import HandNet


def one_switch():
    """A single 36-port switch: CAs on ports 36, 1 and 17 (none between), a two-port HCA
    with both ports on it."""
    net = HandNet(21)
    sw = net.switch("sw0", desc='edge "A" sw\u00e9')
    for i, port in enumerate((36, 1, 17)):
        net.cable(net.hca(f"h{i}"), sw, 1, port)
    dual = net.hca("dual", ports=2)
    net.cable(dual, sw, 1, 5)
    net.cable(dual, sw, 2, 6)
    return net, "h0"


def two_switches():
    """Two switches joined by two cables; a dual-rail HCA with a port on each, a router on the
    second switch's highest port, a two-port router with a port on each."""
    net = HandNet(22)
    a, b = net.switch("swA"), net.switch("swB")
    net.cable(a, b)
    net.cable(a, b)
    for i in range(2):
        net.cable(net.hca(f"a{i}"), a)
        net.cable(net.hca(f"b{i}"), b)
    dual = net.hca("rail", ports=2)
    net.cable(dual, a)
    net.cable(dual, b)
    net.cable(net.router("rt0"), b, 1, 36)
    gw = net.router("gw2", ports=2)  # a two-port router, a port on each switch
    net.cable(gw, a)
    net.cable(gw, b)
    return net, "a0"


def ring(n: int):
    """n switches in a ring, two CAs on each."""
    net = HandNet(30 + n)
    sws = [net.switch(f"ring-s{i}") for i in range(n)]
    for i in range(n):
        net.cable(sws[i], sws[(i + 1) % n])
    for i, sw in enumerate(sws):
        for j in range(2):
            net.cable(net.hca(f"ring-h{i}-{j}"), sw)
    return net, "ring-h0-0"


def tree(links: list[tuple[int, int]], hosts: list[int]):
    """Switches s0.. cabled as `links`, hosts[i] CAs on switch i (a line, a star: trees)."""
    net = HandNet(50 + len(links))
    sws = [net.switch(f"tree-s{i}") for i in range(len(hosts))]
    for a, b in links:
        net.cable(sws[a], sws[b])
    for i, n in enumerate(hosts):
        for j in range(n):
            net.cable(net.hca(f"tree-h{i}-{j}"), sws[i])
    return net, next(f"tree-h{i}-0" for i, n in enumerate(hosts) if n)


def racks(sizes: list[int], hosts: int = 2):
    """Racks of the given sizes, each a clique, every rack pair cabled once (landing switches
    taken round robin), `hosts` CAs per switch."""
    net = HandNet(60 + sum(sizes))
    rk = [[net.switch(f"k{r}-s{i}") for i in range(n)] for r, n in enumerate(sizes)]
    for sws in rk:
        for i, a in enumerate(sws):
            for b in sws[i + 1 :]:
                net.cable(a, b)
    nxt = [0] * len(rk)
    for a in range(len(rk)):
        for b in range(a + 1, len(rk)):
            net.cable(rk[a][nxt[a] % len(rk[a])], rk[b][nxt[b] % len(rk[b])])
            nxt[a] += 1
            nxt[b] += 1
    for r, sws in enumerate(rk):
        for i, sw in enumerate(sws):
            for j in range(hosts):
                net.cable(net.hca(f"k{r}-h{i}-{j}"), sw)
    return net, "k0-h0-0"


def self_cabled():
    """Three racks of three, a switch port cabled to itself (a loopback plug: ibsim takes a
    net file linking a port to its own port) beside two ports of another switch cabled
    together. Returns (net, the SM's CA, (switch, the port cabled to itself))."""
    net, first = racks([3, 3, 3])
    port = net.free["k1-s0"][0]
    net.cable("k1-s0", "k1-s0", port, port)
    net.cable("k2-s1", "k2-s1")
    return net, first, ("k1-s0", port)


def pendant(hosts: int):
    """Three racks of three and one switch more, cabled to the SM's switch only, with `hosts`
    CAs."""
    net, first = racks([3, 3, 3])
    sm_switch = net.links[first][1][0]
    net.cable(net.switch("pend-s0"), sm_switch)
    for j in range(hosts):
        net.cable(net.hca(f"pend-h{j}"), "pend-s0")
    return net, first


def torus(x: int, y: int):
    """An x by y 2D torus (wrap-around links), one CA per switch."""
    net = HandNet(40 + x * y)
    sw = {(i, j): net.switch(f"t-{i}-{j}") for i in range(x) for j in range(y)}
    for (i, j), s in sw.items():
        net.cable(s, sw[((i + 1) % x, j)])
        net.cable(s, sw[(i, (j + 1) % y)])
    for (i, j), s in sw.items():
        net.cable(net.hca(f"t-h{i}-{j}"), s)
    return net, "t-h0-0"


# group (racks of 3 switches, every pair of racks cabled once) -> hosts per switch
HOSTLESS = [[2, 1, 1], [0, 0, 0], [1, 2, 1], [1, 1, 2], [2, 1, 0]]
DESCS = {  # node descriptions an operator (or a vendor's firmware) sets
    0: 'rack "1" sw 0',
    1: "r\u00e4ck 1 \u2013 sw 1",
    2: "{r1} sw 2 } LID:",
    4: "it's  two  spaces",
}


def hostless_group(seed: int = 23):
    """Five racks of three switches, every rack pair cabled once; rack 2's switches have no
    CAs. A two-port HCA with both ports on one switch, a dual-rail HCA on racks 1 and 3, a
    router in rack 5, a CA on port 36 of a switch whose other host ports are empty, odd
    descriptions."""
    net = HandNet(seed)
    racks = []
    for r, hosts in enumerate(HOSTLESS):
        sws = [net.switch(f"r{r}-s{i}", desc=DESCS.get(3 * r + i)) for i in range(len(hosts))]
        for i, a in enumerate(sws):
            for b in sws[i + 1 :]:
                net.cable(a, b)
        racks.append(sws)
    g = len(racks)
    for a in range(g):
        for b in range(a + 1, g):
            net.cable(racks[a][(a + b) % 3], racks[b][(a * b) % 3])
    k = 0
    for r, hosts in enumerate(HOSTLESS):
        for i, n in enumerate(hosts):
            for _ in range(n):
                net.cable(net.hca(f"n{k:02d}", desc=f"n{k:02d} HCA-1"), racks[r][i])
                k += 1
    both = net.hca("both", ports=2, desc="both ports \u00b7 one switch")
    net.cable(both, racks[3][0])
    net.cable(both, racks[3][0])
    rail = net.hca("rail", ports=2)
    net.cable(rail, racks[0][2])
    net.cable(rail, racks[2][1])
    net.cable(net.router("rt", desc='gw "edge"'), racks[4][0])
    last = net.free[racks[4][2]]
    net.cable(net.hca("top", desc="top"), racks[4][2], 1, max(last))
    return net, "n00"
