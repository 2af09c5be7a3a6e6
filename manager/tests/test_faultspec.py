"""The `--fault` spelling and its resolution against a fabric model (the generator's wiring)."""

from __future__ import annotations

import pytest
from ibqos.errors import InputError
from ibqos.faultspec import check_disjoint, cut_together, parse_fault, resolve
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly


@pytest.fixture(scope="module")
def df42():
    return dragonfly(*DRAGONFLY_SIZES[42]).to_fabric()  # GUIDs 1.. in node order


def guid_of(fabric, name):
    return next(n.guid for n in fabric.nodes.values() if n.desc == name)


@pytest.mark.parametrize(
    "text, message",
    [
        ("sw-g0-s0[7]", "want link:NODE[PORT] or switch:NODE"),
        ("link:sw-g0-s0", "a link needs its port, e.g. link:sw-g0-s0[1]"),
        ("switch:sw-g0-s0[3]", "a switch fault takes no port (for one of its links: link:sw-g0-s0[3])"),
        ("link:sw-g0-s0[0]", "port 0 out of range 1..254"),
        ("cable:sw-g0-s0[1]", "want link:NODE[PORT] or switch:NODE"),
    ],
)
def test_bad_spelling_is_one_clear_line(text, message):
    with pytest.raises(InputError) as e:
        parse_fault(text)
    assert str(e.value).startswith(f"--fault: {text!r}: {message}")
    assert "\n" not in str(e.value)


def test_links_resolve_by_name_from_either_end_with_their_kind(df42):
    # generator numbering (topology.py): p=2 hosts, ports 3-4 local, 5-7 global
    local = resolve(parse_fault("link:sw-g2-s0[3]"), df42)
    assert (local.kind, local.peer, local.lost_cas) == ("local link", ("sw-g2-s1", 3), ())
    glob = resolve(parse_fault("link:sw-g0-s1[7]"), df42)
    assert glob.kind == "global link" and glob.peer[0].startswith("sw-g") and not glob.peer[0].startswith("sw-g0-")
    back = resolve(parse_fault(f"link:{glob.peer[0]}[{glob.peer[1]}]"), df42)
    assert back.peer == ("sw-g0-s1", 7)
    host = resolve(parse_fault("link:ca-g3-s1-h0[1]"), df42)
    assert (host.kind, host.peer, host.lost_cas) == ("terminal link", ("sw-g3-s1", 1), ("ca-g3-s1-h0",))


def test_switch_by_guid_takes_its_hosts(df42):
    g = guid_of(df42, "sw-g1-s1")
    sw = resolve(parse_fault(f"switch:0x{g:016x}"), df42)
    assert sw.node == "sw-g1-s1" and sw.port is None
    assert sw.lost_cas == ("ca-g1-s1-h0", "ca-g1-s1-h1")
    assert sw.describe() == "switch sw-g1-s1 down (2 hosts cut off)"


@pytest.mark.parametrize(
    "text, message",
    [
        ("switch:sw-g9-s0", "no node named 'sw-g9-s0' on this fabric"),
        ("switch:0xdead0000", "no node or port GUID 0xdead0000 on this fabric"),
        ("switch:ca-g0-s1-h0", "ca-g0-s1-h0 is a CA, not a switch (for its link: link:ca-g0-s1-h0[1])"),
        ("link:sw-g0-s0[9]", "sw-g0-s0 has no port 9 (ports 1..7)"),
        ("link:sw-g5-s2[7]", "port 7 of sw-g5-s2 has no link"),  # the 42-CA fabric's spare port
        ("switch:sw-g0-s0", "OpenSM runs on ca-g0-s0-h0, which this fault cuts off the fabric"),
        ("link:ca-g0-s0-h0[1]", "OpenSM runs on ca-g0-s0-h0, which this fault cuts off the fabric"),
    ],
)
def test_what_the_fabric_does_not_have_is_refused(df42, text, message):
    with pytest.raises(InputError) as e:
        resolve(parse_fault(text), df42, sm_node="ca-g0-s0-h0")
    assert str(e.value).startswith(f"--fault: {text!r}: {message}")


@pytest.mark.parametrize(
    "first, second, down",
    [
        ("link:sw-g2-s0[3]", "link:sw-g2-s1[3]", "local link sw-g2-s1[3]-sw-g2-s0[3]"),  # both ends of one cable
        ("link:sw-g2-s0[3]", "link:sw-g2-s0[3]", "local link sw-g2-s0[3]-sw-g2-s1[3]"),
        ("switch:sw-g2-s0", "link:sw-g2-s1[3]", "local link sw-g2-s1[3]-sw-g2-s0[3]"),  # a link of a dead switch
        ("link:ca-g1-s1-h0[1]", "switch:sw-g1-s1", "terminal link ca-g1-s1-h0[1]-sw-g1-s1[1]"),
        ("switch:sw-g1-s1", "switch:sw-g1-s1", "switch sw-g1-s1"),
    ],
)
def test_two_faults_on_one_link_or_switch_are_refused(df42, first, second, down):
    """redteam: ibsim refused the second unlink half-way through the faults (exit 3)."""
    faults = [resolve(parse_fault(t), df42) for t in (first, second)]
    with pytest.raises(InputError) as e:
        check_disjoint(faults)
    assert str(e.value) == f"--fault: {second!r}: {first!r} takes {down} down too; name each link or switch once"


def test_one_switch_named_by_its_name_and_by_its_guid_is_refused(df42):
    """Before, both went down (ibsim unlinks a switch twice without a word) and the dry run
    passed with the switch listed twice as two faults."""
    guid = f"0x{guid_of(df42, 'sw-g1-s1'):016x}"
    faults = [resolve(parse_fault(t), df42) for t in ("switch:sw-g1-s1", f"switch:{guid}")]
    with pytest.raises(InputError) as e:
        check_disjoint(faults)
    assert str(e.value) == (
        f"--fault: 'switch:{guid}': 'switch:sw-g1-s1' takes switch sw-g1-s1 down too; name each link or switch once"
    )


@pytest.mark.parametrize(
    "text, node, port",
    [
        ("link:node01 HCA-1 [mlx5_0][2]", "node01 HCA-1 [mlx5_0]", 2),
        ("link:oss01 HCA-1[1]", "oss01 HCA-1", 1),
        ("switch:MF0;leaf01:MSB7700/U1", "MF0;leaf01:MSB7700/U1", None),
        ("switch:rack 3 [spine]", "rack 3 [spine]", None),
    ],
)
def test_a_node_is_named_by_its_description_spaces_and_brackets_included(text, node, port):
    """ibnetdiscover's descriptions ('node01 HCA-1 [mlx5_0]'), which README says --fault takes:
    before, 'want link:NODE[PORT] or switch:NODE' (exit 2)."""
    spec = parse_fault(text)
    assert (spec.node, spec.port) == (node, port)


def test_disjoint_faults_pass(df42):
    check_disjoint([resolve(parse_fault(t), df42) for t in ("link:sw-g2-s0[3]", "switch:sw-g3-s1", "link:sw-g2-s0[4]")])


def _two_switches():
    """swA and swB joined by a cable; h0 on swA, h1 on swB, a dual-rail HCA on both, a router
    on swB only."""
    from ibqos.fabric.model import Fabric, Node, Port

    f = Fabric(source="synthetic")
    nodes = {
        "swA": Node(guid=1, kind="switch", desc="swA", nports=4),
        "swB": Node(guid=2, kind="switch", desc="swB", nports=4),
        "h0": Node(guid=3, kind="ca", desc="h0", nports=1),
        "h1": Node(guid=4, kind="ca", desc="h1", nports=1),
        "rail": Node(guid=5, kind="ca", desc="rail", nports=2),
        "rt": Node(guid=6, kind="router", desc="rt", nports=1),
    }
    f.nodes = {n.guid: n for n in nodes.values()}

    def cable(a: str, pa: int, b: str, pb: int) -> None:
        x, y = nodes[a], nodes[b]
        x.ports[pa] = Port(num=pa, remote=(y.guid, pb))
        y.ports[pb] = Port(num=pb, remote=(x.guid, pa))

    cable("swA", 1, "swB", 1)
    cable("h0", 1, "swA", 2)
    cable("h1", 1, "swB", 2)
    cable("rail", 1, "swA", 3)
    cable("rail", 2, "swB", 3)
    cable("rt", 1, "swB", 4)
    return f


def test_what_a_fault_cuts_off_is_the_end_nodes_it_leaves_without_a_link():
    """A switch takes with it the CAs and routers whose every link is to it, not a dual-rail
    HCA's other rail; a link cuts off its end node only if that was its one link. Before, a
    switch fault listed every CA on the switch (the dual-rail HCA too) and no router, and the
    dry run failed 'every node of the net file discovered' on the router it had taken down."""
    f = _two_switches()
    assert resolve(parse_fault("switch:swB"), f).lost_cas == ("h1", "rt")
    assert resolve(parse_fault("link:rail[1]"), f).lost_cas == ()
    router = resolve(parse_fault("link:swB[4]"), f)
    assert (router.kind, router.lost_cas) == ("terminal link", ("rt",))
    assert resolve(parse_fault("link:h0[1]"), f).lost_cas == ("h0",)


def test_what_faults_cut_off_only_together_is_named_and_a_rump_refused():
    """Each rail of the dual-rail HCA down alone leaves it the other; both down cut it off.
    Before, nothing named it, and the dry run failed 'every node of the net file discovered:
    1 not reached by the SM'. Faults that between them leave the SM the smaller part are
    refused as a single such fault is."""
    f = _two_switches()
    rails = [resolve(parse_fault(t), f, sm_node="h0") for t in ("link:rail[1]", "link:rail[2]")]
    assert [r.lost_cas for r in rails] == [(), ()]
    both = cut_together(rails, f, "h0")
    assert both is not None and (both.lost_cas, both.cut_switches) == (("rail",), ())
    assert both.describe() == "link:rail[1] + link:rail[2] together cut off rail"
    # what a fault cuts off alone is its own, not the pair's
    pair = [resolve(parse_fault(t), f, sm_node="h0") for t in ("link:h1[1]", "link:rail[2]")]
    assert [r.lost_cas for r in pair] == [("h1",), ()]
    assert cut_together(pair, f, "h0") is None
    assert cut_together(rails[:1], f, "h0") is None
    # swB down leaves h0 itself and rail (2 hosts of 4), and rail's link to swA down too, h0 alone
    rump = [resolve(parse_fault(t), f, sm_node="h0") for t in ("switch:swB", "link:rail[1]")]
    assert rump[0].lost_cas == ("h1", "rt")
    with pytest.raises(InputError) as e:
        cut_together(rump, f, "h0")
    assert str(e.value) == (
        "--fault: 'switch:swB', 'link:rail[1]': OpenSM runs on h0, which these faults together cut off the "
        "fabric (it keeps a path to 1 hosts of 4); name another link or switch"
    )
