"""load_dumps on dumps that a real OpenSM wrote for a generated dragonfly, and on broken copies."""

from __future__ import annotations

import os
import re
import shutil
import time

import pytest
from ibqos.errors import ExternalError, InputError
from ibqos.fabric import NO_ROUTE
from ibqos.fabric import dumps as dumps_module
from ibqos.fabric.dumps import LFTS_DUMP, SL2VL_DUMP, SUBNET_LST, load_dumps
from ibqos_sim.harness import Harness
from ibqos_sim.harness.topology import dragonfly

pytestmark = pytest.mark.fabric

TOPO = dragonfly(4, 2, 2)  # 72 CAs, 36 switches


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    d = tmp_path_factory.mktemp("df72")
    net = TOPO.write_net(d / "fabric.net")
    with Harness(net, run_dir=d, console=False) as h:
        run = h.run_sm(engine="minhop", conf={"qos": "TRUE"}, plugin=False, timeout=300)
    return run.dumps


def _links_by_name(fabric) -> set[tuple[str, int, str, int]]:
    desc = {n.guid: n.desc for n in fabric.nodes.values()}
    return {tuple(sorted([(desc[a], pa), (desc[b], pb)])) for a, pa, b, pb in fabric.links()}


def test_dumps_hold_the_generated_fabric(dumps):
    f = load_dumps(dumps)
    assert sum(1 for _ in f.cas()) == 72 and sum(1 for _ in f.switches()) == 36
    assert _links_by_name(f) == _links_by_name(TOPO.to_fabric())
    for n in f.nodes.values():
        for p in n.ports.values():
            if p.num:
                assert (p.width, p.speed) == ("4X", "2.5")
                assert f.nodes[p.remote[0]].ports[p.remote[1]].remote == (n.guid, p.num)


def test_every_switch_routes_every_lid_towards_its_owner(dumps):
    f = load_dumps(dumps)
    lids = f.lid_map()
    assert len(lids) == 72 + 36 and all(p.lmc == 0 for n in f.nodes.values() for p in n.ports.values())
    for sw in f.switches():
        assert len(sw.lft) == max(lids) + 1 and sw.lft[0] == NO_ROUTE
        for lid, (guid, _) in lids.items():
            out = sw.route(lid)
            if guid == sw.guid:
                assert out == 0
            else:  # one hop along the route leads to a real peer
                assert out in sw.ports and sw.ports[out].remote is not None


def test_sl2vl_covers_every_in_port_for_every_linked_out_port(dumps):
    f = load_dumps(dumps)
    for sw in f.switches():
        outs = [p for p in sw.ports if p and sw.ports[p].remote]
        assert set(sw.sl2vl) == {(i, o) for i in range(sw.nports + 1) for o in outs}
    for ca in f.cas():
        assert set(ca.sl2vl) == {(0, 1)}
    assert all(len(v) == 16 for n in f.nodes.values() for v in n.sl2vl.values())


def test_missing_sl2vl_dump_is_optional_only_when_asked(dumps, tmp_path):
    shutil.copytree(dumps, tmp_path / "d")
    (tmp_path / "d" / SL2VL_DUMP).unlink()
    with pytest.raises(InputError, match=f"{SL2VL_DUMP}: missing.*qos TRUE"):
        load_dumps(tmp_path / "d")
    f = load_dumps(tmp_path / "d", require_sl2vl=False)
    assert all(not n.sl2vl for n in f.nodes.values()) and next(f.switches()).lft


@pytest.mark.parametrize("name", [SUBNET_LST, LFTS_DUMP])
def test_missing_dump_names_the_file(dumps, tmp_path, name):
    shutil.copytree(dumps, tmp_path / "d")
    (tmp_path / "d" / name).unlink()
    with pytest.raises(InputError) as e:
        load_dumps(tmp_path / "d")
    assert str(e.value) == f"{tmp_path / 'd' / name}: missing: OpenSM writes it with -D 0x43 and dump_files_dir"


def test_not_a_directory(tmp_path):
    with pytest.raises(InputError, match="not a directory of OpenSM dumps"):
        load_dumps(tmp_path / "nothing")


@pytest.mark.parametrize(
    "name,lineno,mangle",
    [
        (SUBNET_LST, 7, lambda s: s.replace("PortGUID:", "PortGUID;")),
        (SUBNET_LST, 3, lambda s: s.replace(" PN:01 ", " PN:7F ", 1)),
        (LFTS_DUMP, 2, lambda s: "0x00zz 001 # garbage"),
        (LFTS_DUMP, 1, lambda s: s.replace("guid 0x0000", "guid 0x0bad")),
        (LFTS_DUMP, 5, lambda s: s[:7] + "254" + s[10:]),
        (SL2VL_DUMP, 4, lambda s: s.rsplit(" ", 3)[0]),
        (SL2VL_DUMP, 5, lambda s: s.replace(" 7 ", " 16 ", 1)),
    ],
)
def test_garbled_line_names_file_and_line(dumps, tmp_path, name, lineno, mangle):
    shutil.copytree(dumps, tmp_path / "d")
    path = tmp_path / "d" / name
    lines = path.read_text().splitlines()
    bad = mangle(lines[lineno - 1])
    assert bad != lines[lineno - 1]
    lines[lineno - 1] = bad
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as e:
        load_dumps(tmp_path / "d")
    assert str(e.value).startswith(f"{path}:{lineno}: ")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("cut", ["empty", "first-header", "first-header-and-comments", "second-header-and-comments"])
def test_an_sl2vl_dump_cut_at_a_lines_end_is_cut_short_not_a_fabric_without_sl2vl(dumps, tmp_path, ibqos_cli, cut):
    """hostile37: an opensm-sl2vl.dump cut at a line's end (a full disk, a copy stopped) with no
    row at all loaded as a fabric without SL2VL: verify warned 'every SL uses VL 0' and said OK,
    status OK, both exit 0, judging credit loops on one VL that is not what the ports hold.
    OpenSM writes a block with rows for every port: a block without rows, or no block, is one
    line naming the file (and the block's line), exit 2."""
    shutil.copytree(dumps, tmp_path / "d")
    path = tmp_path / "d" / SL2VL_DUMP
    lines = path.read_text().splitlines(keepends=True)
    heads = [n for n, ln in enumerate(lines, 1) if ln.startswith(("Switch ", "Channel Adapter "))]
    head = {"empty": 0, "first-header": heads[0], "second-header-and-comments": heads[1]}.get(cut, heads[0])
    path.write_text("".join(lines[: head + (2 if cut.endswith("comments") else 0)]))
    where = f"{path}:{head}: a port's block without SL2VL rows" if head else f"{path}: no port's SL2VL block"
    with pytest.raises(InputError) as e:
        load_dumps(tmp_path / "d")
    assert str(e.value).startswith(where + ": the dump is cut short"), e.value
    for cmd in ("verify", "status"):
        cp = ibqos_cli(cmd, tmp_path / "d", timeout=120)
        assert cp.returncode == 2 and cp.stderr.startswith(f"ibqos: error: {where}"), cp.stdout + cp.stderr
        assert cp.stderr.count("\n") == 1, cp.stderr


def test_a_subnet_list_cut_at_a_lines_end_is_cut_short_not_a_smaller_fabric(dumps, tmp_path, ibqos_cli):
    """hostile37: opensm-subnet.lst cut at a line's end after the last line naming a CA's port
    (its switch stays, listed by its other links) loaded as a fabric without that CA; with no
    SL2VL dump to name the port (OpenSM with qos FALSE) verify judged the smaller fabric and
    said OK, exit 0. The LFT rows name each LID's owner: a port they name that the subnet list
    does not list is one line naming the LFT dump's line, exit 2."""
    shutil.copytree(dumps, tmp_path / "d")
    path = tmp_path / "d" / SUBNET_LST
    lines = path.read_text().splitlines(keepends=True)

    def guids(text: str) -> set[str]:
        return set(re.findall(r"\{ CA Ports:\S+ SystemGUID:\S+ NodeGUID:\S+ PortGUID:(\S+)", text))

    keep = next(k for k in range(len(lines) - 1, 0, -1) if guids("".join(lines[:k])) < guids("".join(lines)))
    lost = sorted(guids("".join(lines)) - guids("".join(lines[:keep])))
    path.write_text("".join(lines[:keep]))
    (tmp_path / "d" / SL2VL_DUMP).unlink()
    with pytest.raises(InputError) as e:
        load_dumps(tmp_path / "d", require_sl2vl=False)
    assert f"{tmp_path / 'd' / LFTS_DUMP}:" in str(e.value), e.value
    assert f"is port 0x{lost[0].lower()}, which {SUBNET_LST} does not list: a dump is cut short" in str(e.value)
    cp = ibqos_cli("verify", tmp_path / "d", timeout=120)
    assert cp.returncode == 2 and "does not list: a dump is cut short" in cp.stderr, cp.stdout + cp.stderr
    assert cp.stderr.count("\n") == 1 and cp.stderr.startswith("ibqos: error: "), cp.stderr


# Two switches and three CAs, each link at the speed a real cluster runs it: ibsim 0.10 takes a
# link's width and speed from the `lid N 4xHDR` of the line's comment, as ibnetdiscover writes it.
FAST = """\
Hca\t1 "hdr100"\t# "hdr100 HCA-1"
[1]\t"leaf1"[1]\t# lid 5 lmc 0 "leaf1" lid 1 2xHDR

Switch\t40 "leaf1"\t# "leaf1" enhanced port 0 lid 1 lmc 0
[1]\t"hdr100"[1]\t# "hdr100 HCA-1" lid 5 2xHDR
[2]\t"hdr"[1]\t# "hdr HCA-1" lid 6 4xHDR
[39]\t"leaf2"[39]\t# "leaf2" lid 2 12xEDR

Switch\t40 "leaf2"\t# "leaf2" enhanced port 0 lid 2 lmc 0
[39]\t"leaf1"[39]\t# "leaf1" lid 1 12xEDR
[3]\t"fdr"[1]\t# "fdr HCA-1" lid 7 4xFDR

Hca\t1 "hdr"\t# "hdr HCA-1"
[1]\t"leaf1"[2]\t# lid 6 lmc 0 "leaf1" lid 1 4xHDR

Hca\t1 "fdr"\t# "fdr HCA-1"
[1]\t"leaf2"[3]\t# lid 7 lmc 0 "leaf2" lid 2 4xFDR
"""


def test_dumps_of_an_hdr_and_edr_fabric_load_at_the_speeds_opensm_wrote(tmp_path):
    """OpenSM 3.3.23 writes a link's lane speed in opensm-subnet.lst as `SPD=` 2.5, 5, 10, FDR10,
    14, 25, 50 or ?? (osm_dump.c dump_topology_node: LinkSpeedExtActive 14/25/50 when the port
    has extended speeds, '??' for any other, NDR's included), never 'Ext' (that is
    osm_get_lsa_str's, in the verbose report on stdout); widths 1x, 2x, 4x, 8x, 12x or ??. Real
    dumps of HDR100 (2x), HDR, FDR and a 12x EDR trunk load as written, and verify passes."""
    from ibqos.verify import verify_fabric

    (tmp_path / "fast.net").write_text(FAST)
    with Harness(tmp_path / "fast.net", run_dir=tmp_path / "run", console=False) as h:
        run = h.run_sm(engine="minhop", conf={"qos": "TRUE"}, plugin=False)
    f = load_dumps(run.dumps)
    got = {(n.desc, p.num): (p.width, p.speed) for n in f.nodes.values() for p in n.ports.values() if p.remote}
    assert got == {
        ("hdr100 HCA-1", 1): ("2X", "50"),
        ("hdr HCA-1", 1): ("4X", "50"),
        ("fdr HCA-1", 1): ("4X", "14"),
        ("leaf1", 1): ("2X", "50"),
        ("leaf1", 2): ("4X", "50"),
        ("leaf1", 39): ("12X", "25"),
        ("leaf2", 39): ("12X", "25"),
        ("leaf2", 3): ("4X", "14"),
    }, got
    report = verify_fabric(f)
    assert report.pairs == report.delivered == 6 and report.cdg_acyclic
    # what 3.3.23 writes for a speed it has no name for (an NDR link): read as not known
    lst = run.dumps / SUBNET_LST
    lines = lst.read_text().splitlines()
    assert lines[0].endswith(("SPD=50", "SPD=25", "SPD=14"))
    lst.write_text("\n".join([lines[0].rsplit(" PHY=", 1)[0] + " PHY=?? LOG=ACT SPD=??", *lines[1:]]) + "\n")
    port = next(p for n in load_dumps(run.dumps).nodes.values() for p in n.ports.values() if p.speed == "??")
    assert port.width == "??"


@pytest.fixture(scope="module")
def two_sweeps(tmp_path_factory):
    """Real dumps of two sweeps of one fabric: all CAs, then with one CA's cable pulled."""
    d = tmp_path_factory.mktemp("sweeps")
    net = TOPO.write_net(d / "fabric.net")
    with Harness(net, run_dir=d, console=True) as h:
        first = h.run_sm(engine="minhop", conf={"qos": "TRUE"}, name="first", timeout=300).dumps
        h.console('Unlink "ca-g1-s0-h0"[1]')
        second = h.run_sm(engine="minhop", conf={"qos": "TRUE"}, name="second", timeout=300).dumps
    return first, second


def _rewrite_in_place(src, dst) -> None:
    """As OpenSM writes a dump: the same file truncated and written again."""
    for name in (SUBNET_LST, LFTS_DUMP, SL2VL_DUMP):
        (dst / name).write_bytes((src / name).read_bytes())


@pytest.mark.parametrize("after", ["_read_subnet", "_read_lfts"])
def test_dumps_rewritten_by_the_next_sweep_while_read_are_read_again(two_sweeps, tmp_path, monkeypatch, after):
    """A running OpenSM rewrites its dumps at the end of every heavy sweep. Here the next sweep's
    dumps land between two files of the read: the model must be that sweep's whole, never a mix
    (the subnet of the first with a missing CA's routes, or an error naming a port the subnet
    list lacks)."""
    first, second = two_sweeps
    d = shutil.copytree(first, tmp_path / "d")
    wrote = []
    read = getattr(dumps_module, after)

    def read_then_sweep(fabric, path):
        read(fabric, path)
        if not wrote:
            _rewrite_in_place(second, d)
            wrote.append(path)

    monkeypatch.setattr(dumps_module, after, read_then_sweep)
    got = load_dumps(d)
    assert wrote
    monkeypatch.undo()
    assert sum(1 for _ in got.cas()) == 71
    assert got.model_dump() == load_dumps(d).model_dump()


def test_dumps_rewritten_during_every_read_are_one_clear_error(two_sweeps, tmp_path, monkeypatch):
    first, second = two_sweeps
    d = shutil.copytree(first, tmp_path / "d")
    read, turn = dumps_module._read_lfts, [0]

    def read_then_sweep(fabric, path):
        read(fabric, path)
        turn[0] += 1
        _rewrite_in_place((first, second)[turn[0] % 2], d)

    monkeypatch.setattr(dumps_module, "_read_lfts", read_then_sweep)
    monkeypatch.setattr(dumps_module, "REREAD_PAUSE_S", 0)
    with pytest.raises(ExternalError, match=r"d: OpenSM rewrote these dumps while they were read, 5 times in a row"):
        load_dumps(d)


def _sleeps(monkeypatch, between) -> list[float]:
    """load_dumps's pauses, each running `between` instead of waiting."""
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        between(len(slept))

    monkeypatch.setattr(dumps_module.time, "sleep", sleep)
    return slept


def test_a_read_wholly_between_two_files_of_one_rewrite_is_read_again(two_sweeps, tmp_path, monkeypatch):
    """OpenSM's osm_dump_all writes opensm-lfts.dump, then opensm.fdbs and opensm.mcfdbs, then
    opensm-sl2vl.dump, then opensm-subnet.lst. A read that starts after the new LFTs are written
    and ends before the SL2VL dump is, sees no file change while it reads: before, it returned
    the subnet of one sweep with the LFTs of the next (72 CAs, one of them routed nowhere).
    Now the LFTs written after the SL2VL and subnet list they came with, just now, are a pass
    under way: read again once it is whole (71 CAs, as the second sweep)."""
    first, second = two_sweeps
    d = shutil.copytree(first, tmp_path / "d")  # copy2: OpenSM's mtimes, in its order
    (d / LFTS_DUMP).write_bytes((second / LFTS_DUMP).read_bytes())

    def rest_of_the_pass(n: int) -> None:
        for name in (SL2VL_DUMP, SUBNET_LST):
            (d / name).write_bytes((second / name).read_bytes())

    slept = _sleeps(monkeypatch, rest_of_the_pass)
    got = load_dumps(d)
    assert sum(1 for _ in got.cas()) == 71 and len(slept) == 1
    assert got.model_dump(exclude={"source"}) == load_dumps(second).model_dump(exclude={"source"})


def test_dumps_out_of_pass_order_and_not_recent_are_a_copy_read_as_they_are(two_sweeps, tmp_path, monkeypatch):
    """An admin's copy (cp -r, rsync) has mtimes in any order: read at once when old, and when
    made just now by the last attempt (the order is waited on for RECENT_S only)."""
    first, _ = two_sweeps
    d = shutil.copytree(first, tmp_path / "d")
    old = time.time() - 3600
    for age, name in enumerate((LFTS_DUMP, SL2VL_DUMP, SUBNET_LST)):  # the reverse of OpenSM's order
        os.utime(d / name, (old - age, old - age))
    slept = _sleeps(monkeypatch, lambda n: None)
    assert sum(1 for _ in load_dumps(d).cas()) == 72 and slept == []
    monkeypatch.undo()
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    for name in (SUBNET_LST, SL2VL_DUMP, LFTS_DUMP):  # copied just now, the LFTs last
        shutil.copy(first / name, fresh / name)
        time.sleep(0.01)
    t0 = time.monotonic()
    assert sum(1 for _ in load_dumps(fresh).cas()) == 72
    assert dumps_module.RECENT_S <= time.monotonic() - t0 < 3


def test_dumps_left_between_two_files_of_a_rewrite_are_one_clear_error(two_sweeps, tmp_path, monkeypatch):
    """A writer that stays between the LFTs and the SL2VL dump through every attempt: exit 3, the
    message of dumps rewritten during every read."""
    first, second = two_sweeps
    d = shutil.copytree(first, tmp_path / "d")
    (d / LFTS_DUMP).write_bytes((second / LFTS_DUMP).read_bytes())
    slept = _sleeps(monkeypatch, lambda n: os.utime(d / "opensm.fdbs"))  # fdbs written meanwhile
    with pytest.raises(ExternalError, match=r"d: OpenSM rewrote these dumps while they were read, 5 times in a row"):
        load_dumps(d)
    assert len(slept) == 5
