"""docs/group-vectors.txt (shared with the plugin's C unit tests) against the checker's group
discovery and port roles (docs/groups.md)."""

from __future__ import annotations

import pytest
from ibqos.fabric.groups import Ambiguous, NotADragonfly, find_groups, port_roles, switch_roles
from ibqos.fabric.model import Fabric, Node, Port
from ibqos.paths import REPO_ROOT

VECTORS = REPO_ROOT / "docs" / "group-vectors.txt"
CA_BASE = 0x10000  # GUIDs of the end ports: one CA per (switch, port)


def read_vectors() -> dict[str, dict]:
    out: dict[str, dict] = {}
    cur: dict = {}
    for line in VECTORS.read_text().splitlines():
        word, _, rest = line.partition(" ")
        if word == "fabric":
            cur = out[rest] = {"switches": {}, "roles": {}, "groups": None, "refused": None, "switch_roles": {}}
        elif word == "switch":
            i, nports, *cells = rest.split()
            ports = {}
            for c in cells:
                p, peer = c.split(":")
                ports[int(p)] = None if peer == "ca" else tuple(map(int, peer.split(".")))
            cur["switches"][int(i)] = (int(nports), ports)
        elif word == "groups":
            cur["groups"] = sorted(sorted(map(int, g.split())) for g in rest.split("|"))
        elif word == "roles":
            i, *cells = rest.split()
            for c in cells:
                p, role = c.split(":")
                cur["roles"][(int(i), int(p))] = role
        elif word == "switch_roles":
            for c in rest.split():
                i, role = c.split(":")
                cur["switch_roles"][int(i)] = role
        elif word == "refused":
            cur["refused"] = rest
    return out


def to_fabric(switches: dict[int, tuple[int, dict]]) -> Fabric:
    """Switch i has GUID i + 1; every `ca` port has a one-port CA of its own."""
    fabric = Fabric(source="vectors")
    for i, (nports, ports) in switches.items():
        node = Node(guid=i + 1, kind="switch", desc=f"sw{i}", nports=nports)
        node.ports[0] = Port(num=0)
        for p, peer in ports.items():
            if peer is None:
                ca = Node(guid=CA_BASE + i * 256 + p, kind="ca", desc=f"ca{i}.{p}", nports=1)
                ca.ports[1] = Port(num=1, remote=(i + 1, p))
                fabric.nodes[ca.guid] = ca
                node.ports[p] = Port(num=p, remote=(ca.guid, 1))
            else:
                node.ports[p] = Port(num=p, remote=(peer[0] + 1, peer[1]))
        fabric.nodes[node.guid] = node
    return fabric


VECS = read_vectors()


def test_the_vectors_cover_the_spec_cases():
    assert {"half_rack", "chain", "df72_dead_switch", "installer"} <= set(VECS)
    assert len(VECS) >= 8
    assert {"dfp42", "dfp42_missing_spine", "dfp30_odd"} <= set(VECS)
    assert {"dfp42_leaf_spine_down", "dfp_one_leaf_group", "dfp_crossed_leaf_faults"} <= set(VECS)
    assert {"leaf", "spine"} == set(VECS["dfp42"]["switch_roles"].values())


@pytest.mark.parametrize("name", sorted(VECS))
def test_golden_fabric(name):
    vec = VECS[name]
    fabric = to_fabric(vec["switches"])
    if vec["refused"]:
        with pytest.raises(NotADragonfly) as refused:
            find_groups(fabric)
        if isinstance(refused.value, Ambiguous):  # the dragonfly+ reasons are worded alike on both sides
            assert vec["refused"] in str(refused.value)
        return
    part = find_groups(fabric)
    found: dict[int, list[int]] = {}
    for guid, g in part.groups.items():
        found.setdefault(g, []).append(guid - 1)
    assert sorted(map(sorted, found.values())) == vec["groups"]
    roles = port_roles(fabric, part.groups)
    got = {(guid - 1, p): r for (guid, p), r in roles.items() if guid < CA_BASE and p != 0}
    assert got == vec["roles"]
    want = {i: vec["switch_roles"].get(i, "member") for i in vec["switches"]}
    assert {guid - 1: r for guid, r in switch_roles(fabric, part.groups).items()} == want
