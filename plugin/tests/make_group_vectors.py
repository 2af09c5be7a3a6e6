"""Write docs/group-vectors.txt: golden fabrics for group discovery and port roles
(docs/groups.md), read by the plugin's C unit tests (tests/unit/test_group_vectors.c) and by
the checker's (manager/tests/test_group_vectors.py).

The expected partition is the one each fabric was built with, never what either
implementation finds: for the hand-cabled fabrics (adversarial_fabrics.py) the rack in the
switch's name, for the generated dragonflies the generator's group. The roles follow from
that partition by the spec's definition (terminal: to a CA; local: to a switch of the same
group; global: to another group). A fabric the spec refuses says so, with the words its reason
must contain.

Run: .venv/bin/python plugin/tests/make_group_vectors.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import adversarial_fabrics as fabrics  # noqa: E402
import dfplus_fabrics  # noqa: E402
import odd_fabrics  # noqa: E402
from ibqos_sim.harness.topology import dfplus, dragonfly  # noqa: E402
from ibqos_sim.harness.wiring import (  # noqa: E402
    dfplus_few_leaves,
    uneven_leaf_hosts,
    wired_dfplus,
    without_cable,
)

OUT = HERE.parents[1] / "docs" / "group-vectors.txt"
RACK = re.compile(r"sw-r(\d+)-u")

HEADER = """\
# Golden fabrics for dragonfly group discovery and port roles (spec: docs/groups.md).
# Written by plugin/tests/make_group_vectors.py; read by plugin/tests/unit/test_group_vectors.c
# and manager/tests/test_group_vectors.py. Do not edit by hand.
#
# fabric NAME                        starts a fabric; its switches are numbered 0, 1, ...
# switch I NPORTS P:PEER ...          switch I has ports 1..NPORTS; PEER is `ca` (an end
#                                     port) or `S.Q` (port Q of switch S); unlisted ports are
#                                     unconnected
# groups I I ... | I I ... | ...      the expected partition (group order and member order
#                                     do not matter)
# roles I P:ROLE ...                  the role of every connected port of switch I
#                                     (terminal, local or global: roles.py / ibqos_tables.h);
#                                     a port left out has none (a cable looped back)
# switch_roles I:ROLE ...             dragonfly+ fabrics: every switch's role in its group,
#                                     leaf or spine (roles.py SWITCH_ROLES); without this
#                                     line every switch is a member
# refused WORDS                       instead of groups and roles: no partition; the reason
#                                     names WORDS
# end
"""


def _from_links(links: dict[str, dict[int, tuple[str, int]]], kind: dict[str, str], nports: dict[str, int]):
    """(switch names in index order, their ports: port -> 'ca' or (switch index, port))."""
    names = [n for n in links if kind[n] == "Switch"]
    index = {n: i for i, n in enumerate(names)}
    ports = []
    for n in names:
        out = {}
        for p, (peer, pp) in sorted(links[n].items()):
            out[p] = (index[peer], pp) if kind[peer] == "Switch" else "ca"
        ports.append(out)
    return names, ports, [nports[n] for n in names]


def hand(make) -> tuple[list[str], list[dict], list[int]]:
    net, _ = make()
    return _from_links(net.links, net.kind, {n: net.switch_ports for n in net.kind})


def generated(topo) -> tuple[list[str], list[dict], list[int]]:
    links = {n.name: n.links for n in topo.nodes.values()}
    kind = {n.name: n.kind for n in topo.nodes.values()}
    return _from_links(links, kind, {n.name: n.nports for n in topo.nodes.values()})


def without_switch(topo, name: str):
    for p in list(topo.nodes[name].links):
        topo.disconnect(name, p)
    del topo.nodes[name]
    return topo


def write_fabric(out: list[str], name: str, built, group_of, refused: str | None = None, role_of=None) -> None:
    names, ports, nports = built
    out.append(f"fabric {name}")
    for i, ps in enumerate(ports):
        cells = " ".join(f"{p}:{'ca' if peer == 'ca' else f'{peer[0]}.{peer[1]}'}" for p, peer in ps.items())
        out.append(f"switch {i} {nports[i]} {cells}")
    if refused:
        out.append(f"refused {refused}")
    else:
        truth = [group_of(n) for n in names]
        groups: dict[object, list[int]] = {}
        for i, g in enumerate(truth):
            groups.setdefault(g, []).append(i)
        out.append("groups " + " | ".join(" ".join(map(str, m)) for m in groups.values()))
        for i, ps in enumerate(ports):
            cells = []
            for p, peer in ps.items():
                if peer != "ca" and peer[0] == i:
                    continue  # a cable looped back into its own switch: no role
                role = "terminal" if peer == "ca" else "local" if truth[peer[0]] == truth[i] else "global"
                cells.append(f"{p}:{role}")
            out.append(f"roles {i} " + " ".join(cells))
        if role_of:
            out.append("switch_roles " + " ".join(f"{i}:{role_of(n)}" for i, n in enumerate(names)))
    out.append("end")
    out.append("")


def rack_of(name: str) -> int:
    m = RACK.search(name)
    assert m, name
    return int(m.group(1))


def main() -> None:
    out = [HEADER]
    group = {}

    def gen_group(topo):
        group.clear()
        group.update({n.name: n.group for n in topo.nodes.values()})
        return group.__getitem__

    # hand-cabled, one group per rack
    for name in ("installer", "half_rack", "missing_switch", "odd_cables", "hub_switches", "spur"):
        write_fabric(out, name, hand(getattr(fabrics, name)), rack_of)
    write_fabric(out, "chain", hand(fabrics.chain), rack_of, refused="joined neither by a global link")
    # degenerate and odd (odd_fabrics.py): one switch; two switches joined by two cables (one
    # group of 2); racks of 3 of which one has no CAs, with two-port HCAs and a router (its
    # port is a CA port here: `ca`); three switches in a line (refused: groups of 2 and 1)
    write_fabric(out, "one_switch", hand(odd_fabrics.one_switch), lambda n: 0)
    # the group's local links 2-coloured, no global link: the side with more hosts is the leaf
    # (swB: 2 CAs, a rail of the dual-rail HCA, a router and a port of another; swA: one fewer)
    two_roles = {"swA": "spine", "swB": "leaf"}
    write_fabric(out, "two_switches", hand(odd_fabrics.two_switches), lambda n: 0, role_of=two_roles.__getitem__)
    write_fabric(out, "hostless_rack", hand(odd_fabrics.hostless_group), lambda n: n.split("-")[0])
    line = odd_fabrics.tree([(0, 1), (1, 2)], [2, 0, 2])
    write_fabric(out, "line_of_three", hand(lambda: line), None, refused="all groups have the same size")
    # generated: pristine (a=4, 9 groups; a=3 with several global links per group pair) and a
    # dead switch (a rack of three among racks of four: degraded)
    for name, topo in (
        ("df72", dragonfly(4, 2, 2)),
        ("df42", dragonfly(3, 2, 3, 7)),
        ("df72_dead_switch", without_switch(dragonfly(4, 2, 2), "sw-g3-s1")),
    ):
        write_fabric(out, name, generated(topo), gen_group(topo))
    # dragonfly+ (leaf/spine groups): pristine (3 leaves, 3 spines, 7 groups); a spine never
    # installed (degraded: its pairs go through a third group); shuffled ports, uneven hosts
    # and several global links per group pair (5 groups); spines without global links, and
    # spines with the same remote neighbours (twins like the leaves, dfplus_fabrics.py)
    nog = dfplus_fabrics.Spec([dfplus_fabrics.Group(2, 3)] * 3, [((0, 0), (1, 0)), ((0, 0), (2, 0)), ((1, 0), (2, 0))])
    # two spines of group 0 with the same two remote spines (twins like its leaves)
    shared = dfplus_fabrics.Spec(
        [dfplus_fabrics.Group(2, 2)] * 3,
        [((0, 0), (1, 0)), ((0, 1), (1, 0)), ((0, 0), (2, 0)), ((0, 1), (2, 0)), ((1, 1), (2, 1))],
    )
    for name, topo in (
        ("dfp42", dfplus(3, 3, 2, 2)),
        ("dfp_spines_without_globals", dfplus_fabrics.build(nog, "spines-without-globals")),
        ("dfp_spines_sharing_remotes", dfplus_fabrics.build(shared, "spines-sharing-remotes")),
        ("dfp42_missing_spine", wired_dfplus(3, 3, 2, 2, missing_spine=(1, 2))),
        ("dfp30_odd", wired_dfplus(3, 3, 2, 2, g=5, seed=4, shuffle=True, hosts=uneven_leaf_hosts(3, 5, 2, 4))),
    ):
        roles = {n.name: n.role for n in topo.nodes.values()}
        write_fabric(out, name, generated(topo), gen_group(topo), role_of=roles.__getitem__)
    # dragonfly+ booted degraded (no stored map): a leaf that lost a spine joins the group
    # whose spines hold all its neighbours (on dfp42, on shuffled ports with several globals
    # per group pair, in a group of two leaves); a global link down; a leaf without hosts; a
    # group of one leaf (pristine, and with a second leaf that lost a spine)
    hostless = [2] * 21
    hostless[4] = 0
    for name, topo in (
        ("dfp42_leaf_spine_down", without_cable(dfplus(3, 3, 2, 2), "sw-g1-l0", "sw-g1-s0")),
        ("dfp42_global_down", without_cable(dfplus(3, 3, 2, 2), "sw-g1-s0", "sw-g6")),
        ("dfp42_hostless_leaf", wired_dfplus(3, 3, 2, 2, hosts=hostless)),
        (
            "dfp30_shuffled_leaf_spine_down",
            without_cable(wired_dfplus(3, 3, 2, 2, g=5, seed=4, shuffle=True), "sw-g3-l2", "sw-g3-s1"),
        ),
        ("dfp_two_leaves_leaf_spine_down", without_cable(dfplus(2, 2, 2, 2), "sw-g2-l1", "sw-g2-s0")),
        ("dfp_one_leaf_group", dfplus_few_leaves(dfplus(3, 3, 2, 2), 3, 1)),
        (
            "dfp_two_leaf_group_one_down",
            without_cable(dfplus_few_leaves(dfplus(3, 3, 2, 2), 3, 2), "sw-g3-l1", "sw-g3-s2"),
        ),
    ):
        roles = {n.name: n.role for n in topo.nodes.values()}
        write_fabric(out, name, generated(topo), gen_group(topo), role_of=roles.__getitem__)
    # refused: two leaves of a group of two that lost different spines share one spine only
    # (the two readings as groups of one leaf overlap); a leaf cabled to spines of two groups
    crossed = without_cable(without_cable(dfplus(2, 3, 2, 1), "sw-g1-l0", "sw-g1-s2"), "sw-g1-l1", "sw-g1-s0")
    write_fabric(
        out, "dfp_crossed_leaf_faults", generated(crossed), None, refused="the dragonfly+ reading is ambiguous"
    )
    stray = dfplus(3, 3, 2, 2)
    leaf_port = next(p for p, (peer, _) in stray.nodes["sw-g1-l0"].links.items() if peer == "sw-g1-s0")
    spine_port = next(p for p, (peer, _) in stray.nodes["sw-g2-s0"].links.items() if peer == "sw-g2-l0")
    stray.disconnect("sw-g1-l0", leaf_port)
    stray.disconnect("sw-g2-s0", spine_port)
    stray.connect("sw-g1-l0", leaf_port, "sw-g2-s0", spine_port)
    write_fabric(
        out, "dfp42_leaf_on_two_groups", generated(stray), None, refused="linked only to spines, of two groups"
    )
    OUT.write_text("\n".join(out))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
