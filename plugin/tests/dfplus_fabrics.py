"""Dragonflies+ our generator (`ibqos_sim.harness.topology.dfplus`) never draws, spelled out
group by group: leaf and spine counts that differ between groups, spines with spare ports,
global links listed spine pair by spine pair (so some pairs get two and some none), CAs with
two ports on two leaves, leaves without CAs. Port numbers are dealt in order, then
`renumbered` permutes every switch's ports with a seed (`wiring.shuffle_ports`): the same
fabric under another numbering, node order (so GUIDs and LIDs) unchanged.

Names follow the generator's (`sw-g<G>-l<I>`, `sw-g<G>-s<J>`, `ca-g<G>-l<I>-h<K>`), so the
tests' ground truth (group, role) is read from the NodeSpecs, never from what dla found."""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field

from ibqos_sim.harness.topology import NodeSpec, Topology
from ibqos_sim.harness.wiring import shuffle_ports

SPARE = 4  # unused ports on every switch


@dataclass
class Group:
    leaves: int
    spines: int
    hosts: list[int] | None = None  # per leaf; default 2 each


@dataclass
class Spec:
    groups: list[Group]
    # global cables: ((group, spine), (group, spine)), a pair listed twice gets two cables
    globals: list[tuple[tuple[int, int], tuple[int, int]]]
    # CAs with two ports: (group, leaf, group, leaf) for port 1 and port 2
    dual: list[tuple[int, int, int, int]] = field(default_factory=list)


def leaf(g: int, i: int) -> str:
    return f"sw-g{g}-l{i}"


def spine(g: int, j: int) -> str:
    return f"sw-g{g}-s{j}"


def build(spec: Spec, name: str) -> Topology:
    t = Topology(name=name, params={"g": len(spec.groups)})
    nglob: dict[str, int] = {}
    for a, b in spec.globals:
        for g, j in (a, b):
            nglob[spine(g, j)] = nglob.get(spine(g, j), 0) + 1
    hosts = [gr.hosts if gr.hosts is not None else [2] * gr.leaves for gr in spec.groups]
    duals = {}
    for k, (g1, l1, g2, l2) in enumerate(spec.dual):
        duals.setdefault(leaf(g1, l1), []).append((f"ca-dual{k}", 1))
        duals.setdefault(leaf(g2, l2), []).append((f"ca-dual{k}", 2))
    first = next((g, i) for g, hs in enumerate(hosts) for i, n in enumerate(hs) if n)
    t.add(NodeSpec(f"ca-g{first[0]}-l{first[1]}-h0", "Hca", 1, group=first[0]))  # ibsim's SM port
    for g, gr in enumerate(spec.groups):
        for j in range(gr.spines):
            t.add(NodeSpec(spine(g, j), "Switch", gr.leaves + nglob.get(spine(g, j), 0) + SPARE, group=g, role="spine"))
        for i in range(gr.leaves):
            nports = hosts[g][i] + len(duals.get(leaf(g, i), [])) + gr.spines + SPARE
            t.add(NodeSpec(leaf(g, i), "Switch", nports, group=g, role="leaf"))
    for k in range(len(spec.dual)):
        t.add(NodeSpec(f"ca-dual{k}", "Hca", 2))
    free = {n.name: 1 for n in t.nodes.values()}

    def cable(a: str, b: str, pb: int | None = None) -> None:
        pa, free[a] = free[a], free[a] + 1
        if pb is None:
            pb, free[b] = free[b], free[b] + 1
        t.connect(a, pa, b, pb)

    for g, gr in enumerate(spec.groups):
        for i in range(gr.leaves):
            for h in range(hosts[g][i]):
                ca = f"ca-g{g}-l{i}-h{h}"
                if ca not in t.nodes:
                    t.add(NodeSpec(ca, "Hca", 1, group=g))
                cable(leaf(g, i), ca, 1)
            for ca, port in duals.get(leaf(g, i), []):
                cable(leaf(g, i), ca, port)
            for j in range(gr.spines):
                cable(leaf(g, i), spine(g, j))
    for (ga, ja), (gb, jb) in spec.globals:
        cable(spine(ga, ja), spine(gb, jb))
    return t


def renumbered(t: Topology, seed: int) -> Topology:
    """The same fabric with every switch's port numbers permuted."""
    out = shuffle_ports(copy.deepcopy(t), random.Random(seed))
    out.name += f"-ports{seed}"
    return out


def all_pairs(groups: int, spines: list[int]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """One global cable per group pair, each group's spines taken round robin."""
    nxt = [0] * groups
    out = []
    for a in range(groups):
        for b in range(a + 1, groups):
            out.append(((a, nxt[a] % spines[a]), (b, nxt[b] % spines[b])))
            nxt[a] += 1
            nxt[b] += 1
    return out
