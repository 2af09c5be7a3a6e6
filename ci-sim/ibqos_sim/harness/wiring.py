"""Dragonflies wired the way installers wire them, not only the way `topology.dragonfly` does.

Global arrangements (group G's global slots 0 .. a*h-1; slot n sits on switch n % a):
  pair-order  round-robin over group pairs in lexicographic order, (0,1), (0,2), ..., (1,2), ...,
              again while both groups have free slots (several links per pair when g < a*h+1)
  absolute    g = a*h+1: slot j of group i goes to group j, skipping i
  relative    g = a*h+1: slot j of group i goes to group i+j+1 (mod g)
  circulant   g = a*h+1, a*h even: slot 2m to group i+m+1, slot 2m+1 to group i-m-1
  random      one link per group pair in random order, then a random matching of what is left
  distance    `topology.dragonfly`'s own dealing (by group distance)
(Absolute, relative and circulant as in Camarero, Vallejo and Beivide, "Topological
characterization of Hamming and dragonfly networks and its implications on routing", ACM TACO
2014.) Independently of the arrangement: `shuffle` permutes every switch's port numbers,
`hosts` gives each switch its own host count (uneven), `spare` adds unconnected ports.
"""

from __future__ import annotations

import random

from .topology import NodeSpec, Topology, _deal_global_links, _sw, dfplus

WIRINGS = ("distance", "pair-order", "absolute", "relative", "circulant", "random")


def _slots(wiring: str, a: int, h: int, g: int, rng: random.Random) -> list[tuple[int, int, int, int]]:
    """(G, slot, H, slot) per global link."""
    n = a * h
    if wiring in ("absolute", "relative", "circulant") and g != n + 1:
        raise ValueError(f"the {wiring} arrangement needs g = a*h+1 = {n + 1}, not {g}")
    if wiring == "circulant" and n % 2:
        raise ValueError("the circulant arrangement needs a*h even")
    out = []
    used = [0] * g
    if wiring == "pair-order":
        progress = True
        while progress:
            progress = False
            for G in range(g):
                for H in range(G + 1, g):
                    if used[G] < n and used[H] < n:
                        out.append((G, used[G], H, used[H]))
                        used[G] += 1
                        used[H] += 1
                        progress = True
    elif wiring == "absolute":
        out = [(G, H - 1, H, G) for G in range(g) for H in range(G + 1, g)]
    elif wiring == "relative":
        out = [(G, j, (G + j + 1) % g, g - 2 - j) for G in range(g) for j in range(n) if (G + j + 1) % g > G]
    elif wiring == "circulant":
        out = [(G, 2 * m, (G + m + 1) % g, 2 * m + 1) for G in range(g) for m in range(n // 2)]
    elif wiring == "random":
        pairs = [(G, H) for G in range(g) for H in range(G + 1, g)]
        rng.shuffle(pairs)
        for G, H in pairs:
            if used[G] < n and used[H] < n:
                out.append((G, used[G], H, used[H]))
                used[G] += 1
                used[H] += 1
        free = [G for G in range(g) for _ in range(n - used[G])]
        rng.shuffle(free)
        while len(free) >= 2:
            G = free.pop()
            k = next((i for i, H in enumerate(free) if H != G), None)
            if k is None:
                break
            H = free.pop(k)
            out.append((G, used[G], H, used[H]))
            used[G] += 1
            used[H] += 1
    else:
        raise ValueError(f"unknown wiring {wiring!r} (known: {', '.join(WIRINGS)})")
    return out


# PLR0913: the dragonfly's shape (a, p, h) and the cabling choices, keyword options
def wired_dragonfly(  # noqa: PLR0913
    a: int,
    p: int,
    h: int,
    g: int | None = None,
    *,
    wiring: str = "pair-order",
    seed: int = 0,
    shuffle: bool = False,
    hosts: list[int] | None = None,
    spare: int = 0,
) -> Topology:
    """A fully-connected dragonfly with the given global arrangement and port quirks."""
    if g is None:
        g = a * h + 1
    if a < 1 or p < 0 or h < 1 or not 2 <= g <= a * h + 1:
        raise ValueError(f"invalid dragonfly a={a} p={p} h={h} g={g} (need 2 <= g <= a*h+1)")
    if wiring not in WIRINGS:
        raise ValueError(f"unknown wiring {wiring!r} (known: {', '.join(WIRINGS)})")
    rng = random.Random(seed)
    nhosts = hosts if hosts is not None else [p] * (a * g)
    if len(nhosts) != a * g or min(nhosts) < 0:
        raise ValueError(f"hosts needs one count >= 0 per switch ({a * g})")
    pmax = max(nhosts)
    nports = pmax + (a - 1) + h + spare
    t = Topology(
        name=f"dragonfly-a{a}-p{p}-h{h}-g{g}-{wiring}-s{seed}"
        + ("-shuffled" if shuffle else "")
        + ("-uneven" if hosts is not None else "")
        + (f"-spare{spare}" if spare else ""),
        params=dict(a=a, p=p, h=h, g=g, wiring=wiring, seed=seed, shuffle=shuffle),
    )
    perm: dict[str, list[int]] = {}
    for G in range(g):
        for i in range(a):
            name = _sw(G, i)
            t.add(NodeSpec(name, "Switch", nports, group=G))
            order = list(range(1, nports + 1))
            if shuffle:
                rng.shuffle(order)
            perm[name] = [0] + order  # logical port -> physical port
    for G in range(g):
        for i in range(a):
            sw = _sw(G, i)
            for j in range(nhosts[G * a + i]):
                ca = t.add(NodeSpec(f"ca-g{G}-s{i}-h{j}", "Hca", 1, group=G))
                t.connect(ca.name, 1, sw, perm[sw][j + 1])
        for i in range(a):
            for k in range(i + 1, a):
                si, sk = _sw(G, i), _sw(G, k)
                t.connect(si, perm[si][pmax + k], sk, perm[sk][pmax + 1 + i])
    if wiring == "distance":
        logical = Topology(name="", nodes={})
        for G in range(g):
            for i in range(a):
                logical.add(NodeSpec(_sw(G, i), "Switch", pmax + (a - 1) + h, group=G))
        _deal_global_links(logical, a, pmax, h, g)
        for sa, pa, sb, pb in logical.links():
            t.connect(sa, perm[sa][pa], sb, perm[sb][pb])
    else:
        for G, n, H, m in _slots(wiring, a, h, g, rng):
            sa, sb = _sw(G, n % a), _sw(H, m % a)
            t.connect(sa, perm[sa][pmax + a + n // a], sb, perm[sb][pmax + a + m // a])
    # ibsim attaches the SM to the first CA written: keep ca-g0-s0-h0 first
    t.nodes = dict(sorted(t.nodes.items(), key=lambda kv: kv[0] != "ca-g0-s0-h0"))
    return t


def uneven_hosts(a: int, g: int, p: int, seed: int = 0) -> list[int]:
    """Per-switch host counts around p (1 .. 2p-1), switch 0 of group 0 keeps at least one."""
    rng = random.Random(seed)
    counts = [rng.randint(max(0, p - 1), p + 1) for _ in range(a * g)]
    counts[0] = max(counts[0], 1)
    return counts


def shuffle_ports(t: Topology, rng: random.Random) -> Topology:
    """Permute every switch's port numbers (CAs keep port 1): the plugin must not read roles
    from port numbers."""
    perm: dict[str, list[int]] = {}
    for n in t.switches:
        order = list(range(1, n.nports + 1))
        rng.shuffle(order)
        perm[n.name] = [0] + order
    links = t.links()
    for n in t.nodes.values():
        n.links = {}

    def phys(name: str, port: int) -> int:
        return perm[name][port] if name in perm else port

    for a, pa, b, pb in links:
        t.connect(a, phys(a, pa), b, phys(b, pb))
    return t


def wired_dfplus(  # noqa: PLR0913 (a generator's wiring knobs, keyword-only past the shape)
    leaves: int,
    spines: int,
    p: int,
    h: int,
    *,
    g: int | None = None,
    seed: int = 0,
    shuffle: bool = False,
    hosts: list[int] | None = None,
    missing_spine: tuple[int, int] | None = None,
) -> Topology:
    """A dragonfly+ (`topology.dfplus`) with the quirks installers leave: shuffled ports, uneven
    hosts (one count per leaf), several globals per group pair (g < spines*h+1), a spine
    (group, index) never installed (its global ports stay dark)."""

    t = dfplus(leaves, spines, p, h, g, hosts=hosts)
    rng = random.Random(seed)
    if missing_spine is not None:
        name = f"sw-g{missing_spine[0]}-s{missing_spine[1]}"
        for port in list(t.nodes[name].links):
            t.disconnect(name, port)
        del t.nodes[name]
        t.name += f"-nospine-g{missing_spine[0]}-s{missing_spine[1]}"
    if shuffle:
        shuffle_ports(t, rng)
        t.name += f"-shuffled-s{seed}"
    if hosts is not None:
        t.name += "-uneven"
    return t


def uneven_leaf_hosts(leaves: int, g: int, p: int, seed: int = 0) -> list[int]:
    """Per-leaf host counts 0 .. 2p (the first leaf keeps at least one: ibsim's SM port)."""
    rng = random.Random(seed)
    counts = [rng.randint(0, 2 * p) for _ in range(leaves * g)]
    counts[0] = max(counts[0], 1)
    return counts


def dfplus_few_leaves(t: Topology, group: int, keep: int) -> Topology:
    """Group `group` of a dragonfly+ keeps its first `keep` leaves (and their hosts): a group
    of one leaf, or of two."""
    doomed = [n.name for n in t.switches if n.role == "leaf" and n.group == group][keep:]
    for name in doomed:
        gone = [name] + [peer for peer, _ in t.nodes[name].links.values() if t.nodes[peer].kind != "Switch"]
        for node in gone:
            for port in list(t.nodes[node].links):
                t.disconnect(node, port)
            del t.nodes[node]
    t.name += f"-g{group}-{keep}leaves"
    return t


def without_cable(t: Topology, a: str, b: str) -> Topology:
    """The first cable between switch a and a switch whose name starts with b removed (a link
    an installer left out, or one that was down when the SM started)."""
    port = next(p for p, (peer, _) in sorted(t.nodes[a].links.items()) if peer.startswith(b))
    t.disconnect(a, port)
    t.name += f"-no-{a}-{b}"
    return t
