"""Net files as ibnetdiscover writes them on a real cluster, not as our generator does:
`vendid=`/`devid=`/`sysimgguid=`/`switchguid=`/`caguid=` lines, nodes named "S-<guid>" and
"H-<guid>" with the node description in a `# "…"` comment (spaces, brackets, `;` and `:`,
longer than a NodeDescription holds), `[n](guid)` port suffixes, `# lid N lmc 0` comments,
switches of 36 and 40 ports with links on scattered ports, a CA with two ports on two switches
(nets/ibnetdiscover-two-leaves.net). Edited copies add an island, a router, and a link whose
two ends disagree. Each goes through `ibqos dryrun --net` on real OpenSM and ibsim."""

from __future__ import annotations

import codecs
import json
import re
from pathlib import Path

import pytest
from ibqos.errors import InputError
from ibqos.paths import REPO_ROOT
from ibqos_sim.harness import net_port_types, netfile, sm_node_name

NET = Path(__file__).resolve().parent / "nets" / "ibnetdiscover-two-leaves.net"
POLICY = REPO_ROOT / "examples" / "two-class.yaml"
LEAF1 = "MF0;leaf01:MSB7700/U1"
LONG = "compute-rack12-chassis03-blade07 ConnectX-6 VPI adapter card HDR100 mlx5_2"

ISLAND = """
switchguid=0x7cfe900300a5c4e0(7cfe900300a5c4e0)
Switch\t36 "S-7cfe900300a5c4e0"\t\t# "MF0;spare01:MSB7700/U1" enhanced port 0 lid 0 lmc 0
[1]\t"H-0002c90300009000"[1](2c90300009001) \t\t# "spare-node HCA-1" lid 0 4xEDR

caguid=0x2c90300009000
Ca\t1 "H-0002c90300009000"\t\t# "spare-node HCA-1"
[1](2c90300009001) \t"S-7cfe900300a5c4e0"[1]\t\t# lid 0 lmc 0 "MF0;spare01:MSB7700/U1" lid 0 4xEDR
"""

L5 = '[5]\t"H-0002c90300001000"[1](2c90300001001) \t\t# "node01 HCA-1 [mlx5_0]" lid 5 4xEDR\n'

NODE01_P1 = '[1](2c90300001001) \t"S-7cfe900300a5a2c0"[5]\t\t# lid 5 lmc 0 "MF0;leaf01:MSB7700/U1" lid 1 4xEDR\n'

ROUTER = """
rtguid=0x2c9030000a000
Rt\t1 "R-0002c9030000a000"\t\t# "ib-router01"
[1](2c9030000a001) \t"S-7cfe900300a5a2c0"[2]\t\t# lid 9 lmc 0 "MF0;leaf01:MSB7700/U1" lid 1 4xEDR
"""


def _edited(tmp_path: Path, extra: str = "", replace: tuple[str, str] = ("", "")) -> Path:
    net = tmp_path / "cluster.net"
    net.write_text(NET.read_text().replace(*replace) + extra)
    return net


def _dryrun(ibqos_cli, net: Path, out: Path, *extra: str):
    r = ibqos_cli("dryrun", POLICY, "--net", net, "--out", out, *extra, timeout=600)
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    return r


def _checks(out: Path) -> dict[str, dict]:
    return {c["check"]: c for c in json.loads((out / "report.json").read_text())["fabric_checks"]}


def test_node_descriptions_are_the_ones_ibsim_gives():
    """ibsim (sim_net.c) takes the description from the record's comment, cut to 63 bytes;
    policies' port names, node_type filters and faults name nodes by it."""
    nodes = {r.name: r for r in netfile.node_records(netfile.read_net(NET))}
    assert nodes["S-7cfe900300a5a2c0"].desc == LEAF1
    assert nodes["H-0002c90300001000"].desc == "node01 HCA-1 [mlx5_0]"
    assert nodes["H-0002c90300003000"].desc == LONG[:63]
    types = net_port_types(NET)
    assert types["node01 HCA-1 [mlx5_0]/P2"] == "CA" and types[f"{LEAF1}/P0"] == "SWITCH"
    assert sm_node_name(NET) == LEAF1  # the first record: ibsim attaches the SM to its port 0
    assert netfile.ibsim_node_id(NET, "oss01 HCA-1") == "H-0002c90300002000"
    assert netfile.ibsim_node_id(NET, "H-0002c90300002000") == "H-0002c90300002000"
    # GUIDs as ibsim numbers them from the caguid=/switchguid= lines: node, port, switch
    assert netfile.ibsim_node_id(NET, "0x0002c90300001000") == "H-0002c90300001000"
    assert netfile.ibsim_node_id(NET, "0x0002c90300001002") == "H-0002c90300001000"
    assert netfile.ibsim_node_id(NET, "0x7cfe900300a5b3d0") == "S-7cfe900300a5b3d0"


def test_a_description_two_nodes_share_is_refused_for_a_fault(tmp_path):
    net = _edited(tmp_path, replace=('# "oss01 HCA-1"', '# "node01 HCA-1 [mlx5_0]"'))
    with pytest.raises(InputError, match="shared by 2 nodes"):
        netfile.ibsim_node_id(net, "node01 HCA-1 [mlx5_0]")


def test_two_leaves_joined_by_a_trunk_pass_as_planned(ibqos_cli, tmp_path):
    """Before: "tables equal the plan" failed on the spine's turn back down the parallel
    link it came in on (a turn no route makes, which dla leaves at the class's first VL)."""
    out = tmp_path / "dr"
    r = _dryrun(ibqos_cli, NET, out)
    assert r.returncode == 0, r.stderr[-1500:]
    checks = _checks(out)
    assert checks["tables equal the plan"]["result"] == "every port"
    assert checks["every node of the net file discovered"]["ok"] is True


def test_a_real_cluster_file_runs_with_a_fault_named_by_description(ibqos_cli, tmp_path):
    """Before: ibsim's console was sent the description and refused it (exit 3)."""
    out = tmp_path / "dr"
    r = _dryrun(ibqos_cli, NET, out, "--fault", f"link:{LEAF1}[31]")
    assert r.returncode == 0, r.stderr[-1500:]
    checks = _checks(out)
    assert "MF0;leaf01:MSB7700/U1[31]-MF0;leaf02:QM8700/U1[40] down" in checks["fault applied"]["result"]
    assert checks["reachability"]["result"] == "12/12 CA pairs"  # 4 CA ports, node01 has two
    assert checks["every node of the net file discovered"]["ok"] is True


@pytest.mark.parametrize("char", ["\f", "\u2028"], ids=["form-feed", "line-separator"])
def test_a_description_with_a_character_python_ends_a_line_at_runs_as_ibsim_reads_it(ibqos_cli, tmp_path, char):
    """ibsim ends a line at LF only. Before: the check split the line there (str.splitlines)
    and refused the file, ':23: ... lists 2 of its 40 ports and this line follows at once'
    (exit 2), a line the file does not have."""
    out = tmp_path / "dr"
    r = _dryrun(ibqos_cli, _edited(tmp_path, replace=("oss01 HCA-1", f"oss01{char}HCA-1")), out)
    assert r.returncode == 0, r.stderr[-1500:]
    assert _checks(out)["every node of the net file discovered"]["ok"] is True


def test_a_fault_names_a_node_by_a_description_with_spaces(ibqos_cli, tmp_path):
    """'oss01 HCA-1', as ibnetdiscover gives descriptions. Before: '--fault: 'link:oss01
    HCA-1[1]': want link:NODE[PORT] or switch:NODE, ...' (exit 2): no description with a space
    could be named, only the node's GUID."""
    out = tmp_path / "dr"
    r = _dryrun(ibqos_cli, NET, out, "--fault", "link:oss01 HCA-1[1]")
    assert r.returncode == 0, r.stderr[-1500:]
    checks = _checks(out)
    assert checks["fault applied"]["result"] == (
        "terminal link oss01 HCA-1[1]-MF0;leaf02:QM8700/U1[33] down (oss01 HCA-1 cut off)"
    )
    assert checks["reachability"]["result"] == "6/6 CA pairs"  # node01's two ports and the third CA
    assert checks["every node of the net file discovered"]["ok"] is True


TRUNK32 = (
    '[32]\t"S-7cfe900300a5b3d0"[39]\t\t# "MF0;leaf02:QM8700/U1" lid 2 4xEDR\n',
    '[39]\t"S-7cfe900300a5a2c0"[32]\t\t# "MF0;leaf01:MSB7700/U1" lid 1 4xEDR\n',
)


@pytest.mark.parametrize(
    "trunks, faults, row, says",
    [
        (
            2,
            [f"link:{LEAF1}[31]", f"link:{LEAF1}[32]"],
            "faults applied together",
            f"link:{LEAF1}[31] + link:{LEAF1}[32] together cut off oss01 HCA-1 and 1 switch",
        ),
        (1, [f"link:{LEAF1}[31]"], "fault applied", f"local link {LEAF1}[31]-MF0;leaf02:QM8700/U1[40] down (oss01"),
    ],
    ids=["both-trunks", "the-one-trunk"],
)
def test_a_dual_rail_hca_on_both_leaves_is_no_path_between_them(ibqos_cli, tmp_path, trunks, faults, row, says):
    """node01's two ports are on leaf01 and leaf02: with the trunks down leaf02 and oss01 are
    cut off from the SM (on leaf01), OpenSM's directed routes ending at a CA. Before, the cut
    was searched through the HCA, nothing was named, and the dry run failed 'every node of the
    net file discovered: 2 not reached by the SM' (exit 1)."""
    net = tmp_path / "cluster.net"
    text = NET.read_text()
    net.write_text(text if trunks == 2 else text.replace(TRUNK32[0], "").replace(TRUNK32[1], ""))
    out = tmp_path / "dr"
    r = _dryrun(ibqos_cli, net, out, *(a for f in faults for a in ("--fault", f)))
    assert r.returncode == 0, r.stderr[-1500:]
    checks = _checks(out)
    assert checks[row]["result"].startswith(says), checks[row]
    assert checks["every node of the net file discovered"]["ok"] is True
    assert checks["reachability"]["result"] == "2/2 CA pairs"  # node01's port 1 and the third CA


def test_a_fault_on_the_sms_own_switch_is_refused_up_front(ibqos_cli, tmp_path):
    """Before: the switch went down under the SM and the run ended in 'live:ibsim:…: 0 CA
    ports with a LID and a link' (exit 2, naming no input)."""
    r = _dryrun(ibqos_cli, NET, tmp_path / "dr", "--fault", f"switch:{LEAF1}")
    assert r.returncode == 2, r.stderr[-1500:]
    assert f"OpenSM runs on {LEAF1}, which this fault cuts off" in r.stderr, r.stderr


def test_an_island_the_sm_cannot_reach_fails_the_dry_run(ibqos_cli, tmp_path):
    """Before: the island was left out of every check and the run passed (exit 0)."""
    out = tmp_path / "dr"
    r = _dryrun(ibqos_cli, _edited(tmp_path, ISLAND), out)
    assert r.returncode == 1, r.stderr[-1500:]
    row = _checks(out)["every node of the net file discovered"]
    assert row["ok"] is False and row["result"] == "2 not reached by the SM: MF0;spare01:MSB7700/U1, spare-node HCA-1"


def test_a_router_is_an_end_of_the_fabric_not_a_bad_model(ibqos_cli, tmp_path):
    """Before: the simulator refused the dry run's own fabric.json (exit 2: 'links to
    unknown node'), as it models no router."""
    net = _edited(tmp_path, ROUTER)
    net.write_text(
        net.read_text().replace(
            '[5]\t"H-0002c90300001000"[1]',
            '[2]\t"R-0002c9030000a000"[1](2c9030000a001) \t\t# "ib-router01" lid 9 4xEDR\n[5]\t"H-0002c90300001000"[1]',
        )
    )
    out = tmp_path / "dr"
    r = _dryrun(ibqos_cli, net, out)
    assert r.returncode == 0, r.stderr[-1500:]
    kinds = [n["kind"] for n in json.loads((out / "fabric.json").read_text())["nodes"]]
    assert kinds.count("router") == 1


@pytest.mark.parametrize(
    "extra, replace, says",
    [
        # ibsim numbers routers from GUID 0 without it, and OpenSM drops them (ERR 0D16)
        (ROUTER.replace("rtguid=0x2c9030000a000\n", ""), ("", ""), ":48: router 'R-0002c9030000a000' has no GUID"),
        # ibsim: "sim_init failed", no line
        (
            "",
            ('"S-7cfe900300a5a2c0"[5]\t\t# lid 5', '"S-7cfe900300a5a2c0"[6]\t\t# lid 5'),
            ":11: 'S-7cfe900300a5a2c0' port 5 links to 'H-0002c90300001000' port 1, but line 31 links that port "
            "to 'S-7cfe900300a5a2c0' port 6",
        ),
        # ibsim ends a port list at the first other line and drops it: the next record was
        # lost ("sim_init failed", blamed on the links)
        (
            "",
            ("4xEDR\n\nvendid=0x2c9\ndevid=0xd2f0", "4xEDR\nvendid=0x2c9\ndevid=0xd2f0"),
            ":15: 'S-7cfe900300a5a2c0' lists 4 of its 36 ports and this line follows at once",
        ),
        # ibsim: an ibpanic, exit 3 without a line
        ("", ("vendid=0x2c9\ndevid=0xcb20", "width=99\nvendid=0x2c9\ndevid=0xcb20"), ":6: width=99: ibsim takes 1..31"),
        # a description in a link line's comment: ibsim read 's=io' as a link speed and failed
        # ('ibsim cannot parse this net file', and the run directory left behind)
        (
            "",
            ("oss01 HCA-1", "oss01 class=io HCA-1"),
            ":22: ibsim reads 'class=io' on this link line as its speed option s= (an '=' anywhere after the peer, "
            "its comment included) and refuses the value: it takes 1..7",
        ),
        # ibsim: an ibpanic ('mismatched enabled width' between two GUIDs), exit 3
        (
            "",
            ('"node01 HCA-1 [mlx5_0]" lid 5 4xEDR', '"node01 HCA-1 [mlx5_0]" lid 5 2xHDR'),
            ":11: 'S-7cfe900300a5a2c0' port 5 runs 2x wide and 'H-0002c90300001000' port 1 (line 31) 1x/4x: "
            "ibsim finds no width both ends take",
        ),
        # the patched ibsim's m= (MTUCap, ci-sim/ibsim-patch/0002-mtucap-and-neighbor-mtu.patch):
        # 'ibsim cannot parse this net file'
        (
            "",
            ("oss01 HCA-1", "oss01 platform=x86 HCA-1"),
            ":22: ibsim reads 'platform=x86' on this link line as its patched MTUCap option m=",
        ),
        # an option ibsim takes, in a description: the link ran MTU 256 ('dim=1' is m=1) and the
        # dry run failed 'link MTU >= the plan's 2048' (exit 1) on an MTU the cluster lacks
        (
            "",
            ("oss01 HCA-1", "oss01 dim=1 HCA-1"),
            ":22: ibsim reads 'dim=1' in this link line's comment as its patched MTUCap option m= and sets the link's "
            "patched MTUCap from it (an '=' anywhere after the peer, its comment included); keep '=' out of node "
            "descriptions, or give the option before the '#'",
        ),
        (
            "",
            ("oss01 HCA-1", "oss01 rack w=4 row 2"),
            ":22: ibsim reads 'w=4' in this link line's comment as its width",
        ),
        # was ':12: ... lists 1 of its 36 ports and this line follows at once: ... leave a blank line'
        ("", (L5, L5 + '[-3]\t"H-0002c90300002000"[1]\n'), ':12: not a link ([PORT] "PEER"[PORT], both ports numbers)'),
        # ibsim's description ends at the NUL: 'oss01' was read back, and the dry run failed
        # 'every node of the net file discovered' (exit 1)
        ("", ("oss01 HCA-1", "oss01\0HCA-1"), ":22: a NUL byte: ibsim ends the line's text there"),
        # ibsim reads GUID 0 (strtoull): OpenSM's ERR 0D16 and exit 3, no line named
        (
            "",
            ("caguid=0x2c90300002000", "caguid=0xZZZ"),
            ":37: caguid=0xZZZ: caguid takes a number (0x and hex digits)",
        ),
        ("", ("caguid=0x2c90300002000", "caguid=0x0"), ":38: 'H-0002c90300002000' gets GUID 0 from the GUID line"),
        # a switch block copied with its switchguid= line: 'ibsim cannot parse this net file'
        (
            "",
            ("switchguid=0x7cfe900300a5b3d0(7cfe900300a5b3d0)", "switchguid=0x7cfe900300a5a2c0(7cfe900300a5a2c0)"),
            ":20: 'S-7cfe900300a5b3d0' gets GUID 0x7cfe900300a5a2c0, which 'S-7cfe900300a5a2c0' (line 10) has already",
        ),
        # the link listed at one end only: ibsim 'cannot build a fabric from this net file', no line
        (
            "",
            ('[1](2c90300002001) \t"S-7cfe900300a5b3d0"[33]\t\t# lid 8 lmc 0 "MF0;leaf02:QM8700/U1" lid 2 4xEDR\n', ""),
            ":22: 'S-7cfe900300a5b3d0' port 33 links to 'H-0002c90300002000' port 1, whose record lists no link on "
            "that port: ibsim needs both ends of a link listed",
        ),
        # ibsim takes it; no cable joins a port to itself, so the file has a typo (before: exit 1 in dla)
        ("", (L5, L5 + '[6]\t"S-7cfe900300a5a2c0"[6]\n'), ":12: 'S-7cfe900300a5a2c0' port 6 links to itself"),
        # ibsim skips a record spelt otherwise or a line not in the first column, and stops on
        # the links to the node it never made ('ibsim cannot build a fabric', no line)
        (
            "",
            ('Switch\t40 "S-7cfe900300a5b3d0"', 'switch\t40 "S-7cfe900300a5b3d0"'),
            ':20: \'switch\\t40 "S-7cfe900300a5b3d0"\\t\\t# "MF0;l\': ibsim reads a record (Switch, Hca, Ca or Rt, '
            "spelt so)",
        ),
        ("", (L5, "  " + L5), ":11: '[5]\\t\"H-0002c90300001000\"[1](2c9030000100': ibsim reads a record"),
        # ibsim read the rest as a line of its own, which ended leaf01's port list: its last two
        # links were dropped ('ibsim cannot build a fabric', no line)
        (
            "",
            ('"node01 HCA-1 [mlx5_0]" lid 5 4xEDR\n', '"node01 HCA-1 [mlx5_0]" lid 5 4xEDR ' + "x" * 200 + "\n"),
            ":11: 283 bytes: ibsim reads 254 of a line and the rest as a line of its own",
        ),
        # ibsim counts port lines: node01's two were its [1] twice, and its [2] was skipped
        # ('ibsim cannot build a fabric', no line)
        ("", (NODE01_P1, NODE01_P1 + NODE01_P1), ":32: port 1 of 'H-0002c90300001000' is listed twice (line 31 too)"),
        # the blank line ended leaf01's port list: ibsim skipped the three links after it
        (
            "",
            (L5, L5 + "\n"),
            ":13: a link of 'S-7cfe900300a5a2c0' past the end of its port list (line 12: a blank or other line",
        ),
    ],
    ids=[
        "router-without-guid",
        "ends-disagree",
        "no-blank-line",
        "bad-width",
        "equals-in-description",
        "widths",
        "equals-the-patched-ibsim-reads",
        "a-valid-option-in-a-description",
        "a-valid-width-in-a-description",
        "a-negative-port",
        "a-nul-byte",
        "a-guid-that-is-no-number",
        "guid-0",
        "one-guid-twice",
        "a-link-one-end-lists",
        "a-port-cabled-to-itself",
        "a-record-in-lower-case",
        "an-indented-link",
        "a-line-ibsim-cuts",
        "a-port-listed-twice",
        "a-blank-line-in-a-port-list",
    ],
)
def test_net_files_ibsim_would_mangle_are_named_with_their_line(ibqos_cli, tmp_path, extra, replace, says):
    _refused_up_front(ibqos_cli, tmp_path, _edited(tmp_path, extra, replace), says)


def _refused_up_front(ibqos_cli, tmp_path: Path, net: Path, says: str) -> None:
    """check_net and the dry run say `says`, in one line, exit 2, before anything is written."""
    with pytest.raises(InputError) as e:
        netfile.check_net(net)
    assert says in str(e.value), str(e.value)
    r = _dryrun(ibqos_cli, net, tmp_path / "dr")
    assert r.returncode == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "dr").exists()


def _second_port_only(text: str) -> str:
    """node01, a two-port HCA, listed first with only its port 2 cabled."""
    node01 = text.split("\n\n")[3]
    assert node01.splitlines()[4] == 'Ca\t2 "H-0002c90300001000"\t\t# "node01 HCA-1 [mlx5_0]"'
    port1 = '[5]\t"H-0002c90300001000"[1](2c90300001001) \t\t# "node01 HCA-1 [mlx5_0]" lid 5 4xEDR\n'
    rest = text.replace(node01 + "\n\n", "")
    assert port1 in rest
    first = "\n".join(ln for ln in node01.splitlines() if not ln.startswith("[1]"))
    return first + "\n\n" + rest.replace(port1, "")


@pytest.mark.parametrize(
    "edit, says",
    [
        (
            lambda t: 'caguid=0x2c90300009000\nCa\t1 "H-0002c90300009000"\t\t# "spare-node HCA-1"\n\n' + t,
            ":2: ibsim attaches OpenSM to the first node, 'H-0002c90300009000', which has no link",
        ),
        (
            _second_port_only,
            ":5: ibsim attaches OpenSM to port 1 of the first node, 'H-0002c90300001000', and that port has no link",
        ),
    ],
    ids=["no-link", "second-port-only"],
)
def test_a_first_node_opensm_cannot_run_on_is_named_with_its_line(ibqos_cli, tmp_path, edit, says):
    """redteam: ibsim attaches OpenSM to the first node, on port 1 of a CA (libumad2sim). A
    spare HCA listed first, or a two-port HCA with only port 2 cabled, left OpenSM alone with
    its node, and the dry run ended in an internal error ('no port reports a VLArb capacity',
    exit 70)."""
    net = tmp_path / "cluster.net"
    net.write_text(edit(NET.read_text()))
    _refused_up_front(ibqos_cli, tmp_path, net, says)


UNSET = "MT4123 ConnectX6 Mellanox Technologies"  # a CA's description where no one set it


def _shared(t: str) -> str:
    """Two single-port CAs with one description, the first the link-shares incast's target."""
    return (
        t.replace('[17]\t"H-0002c90300001000"[2](2c90300001002) \t\t# "node01 HCA-1 [mlx5_0]" lid 6 4xEDR\n', "")
        .replace(
            '[2](2c90300001002) \t"S-7cfe900300a5b3d0"[17]\t\t# lid 6 lmc 0 "MF0;leaf02:QM8700/U1" lid 2 4xEDR\n', ""
        )
        .replace('Ca\t2 "H-0002c90300001000"', 'Ca\t1 "H-0002c90300001000"')
        .replace("node01 HCA-1 [mlx5_0]", UNSET)
        .replace("oss01 HCA-1", UNSET)
    )


@pytest.mark.parametrize(
    "edit",
    [
        _shared,
        # commas (the incast's list separator), '#', quotes and brackets in descriptions
        lambda t: t.replace("node01 HCA-1 [mlx5_0]", "node01: a=b, c;d HCA-1").replace("oss01 HCA-1", "oss#1 'x' (y)"),
    ],
    ids=["shared-description", "commas-and-hashes"],
)
def test_descriptions_as_sites_have_them_do_not_break_the_simulation(ibqos_cli, tmp_path, edit):
    """Before: the link-shares incast named its sources by description, joined with commas:
    exit 2, 'dst: two-node source and destination are the same port' / "src: no CA port named
    'node01: a=b'". Now by port GUID."""
    net = tmp_path / "cluster.net"
    net.write_text(edit(NET.read_text()))
    out = tmp_path / "dr"
    r = _dryrun(ibqos_cli, net, out)
    assert r.returncode == 0, r.stderr[-1500:]
    assert _checks(out)["every node of the net file discovered"]["ok"] is True


def test_a_fault_on_a_node_whose_description_is_shared_is_named_by_guid(ibqos_cli, tmp_path):
    """faultspec refuses the shared description and asks for a GUID; the GUID then reached
    ibsim as the description, which names two nodes."""
    net = tmp_path / "cluster.net"
    net.write_text(_shared(NET.read_text()))
    out = tmp_path / "dr"
    r = _dryrun(ibqos_cli, net, out, "--fault", "link:0x0002c90300002001[1]")
    assert r.returncode == 0, r.stderr[-1500:]
    assert f"terminal link {UNSET}[1]-MF0;leaf02:QM8700/U1[33] down" in _checks(out)["fault applied"]["result"]


NAMED = """\
fabric: {rate: HDR, mtu: 2048, data_vls: 8, vlarb_cap: {high: 8, low: 8}, routing: minhop, max_switch_hops: 1}
classes:
  - name: storage
    priority: high
    bandwidth: 30
    sls: [3]
    match:
      groups:
        - {name: oss, port_name: ["oss01 HCA-1/P1"]}
  - name: bracketed
    bandwidth: 30
    sls: [4]
    match:
      groups:
        - {name: n01, port_name: ["node01 HCA-1 [mlx5_0]/P2"]}
      direction: destination
  - name: rest
    bandwidth: rest
    default: true
"""


def test_port_names_with_spaces_match_on_real_opensm(tmp_path, ibsim_fabric):
    """Node descriptions as Linux sets them ("host HCA-1", "host mlx5_0") hold a space. The
    rendered `port-name: oss01 HCA-1/P1` matched nothing in OpenSM 3.3.23 (every path SL 0,
    no error logged); quoted, the SA answers the class's SL."""
    from ibqos import osmlog
    from ibqos.verify.sa_paths import query_path_sl_keys
    from ibqos_app.dryrun.pipeline import DryRun, DryRunConfig

    policy = tmp_path / "named.yaml"
    policy.write_text(NAMED)
    (tmp_path / "dry").mkdir()
    dry = DryRun(DryRunConfig(policy=policy, out=tmp_path / "dry", net=NET))
    dry.stage_plan()
    dry.stage_render()
    long_, oss, node01 = 0x0002C90300003001, 0x0002C90300002001, 0x0002C90300001000
    with ibsim_fabric(NET, run_dir=tmp_path / "run", console=False) as h:
        sm = h.start_sm(engine="minhop", plugin=False, conf_files=[dry.s.rendered["opensm.conf"]])
        assert osmlog.errors(sm.lines()) == []
        got = query_path_sl_keys(
            [(long_, oss, None, None), (long_, node01 + 2, None, None), (long_, node01 + 1, None, None)], h.env
        )
        sm.stop()
    assert got == [3, 4, 0]  # storage (either end), bracketed (destination port 2 only), rest


def test_a_description_ibsim_cuts_inside_a_character_is_the_node_the_sm_reached(ibqos_cli, tmp_path):
    """ibsim keeps 63 bytes of a node description: a non-ASCII one can lose half a character,
    which the read-back writes as U+FFFD. Before: the net file's reader dropped the half
    character, and the dry run failed 'every node of the net file discovered: 2 not reached by
    the SM' on two CAs it had routed (exit 1)."""
    two = "rack-é-" + "é" * 40  # byte 63 is the first of an é's two
    three = "n" + "計算ノード" * 5  # bytes 62-63 are two of a character's three
    net = tmp_path / "cluster.net"
    net.write_text(NET.read_text().replace("oss01 HCA-1", two).replace(LONG, three))
    cut = {two[:34] + "\ufffd", three[:21] + "\ufffd"}  # 8 + 27 x 2 + 1 bytes; 1 + 20 x 3 + 2
    out = tmp_path / "dr"
    r = _dryrun(ibqos_cli, net, out)
    assert r.returncode == 0, r.stderr[-1500:]
    assert _checks(out)["every node of the net file discovered"]["result"] == "yes"
    got = {n["desc"] for n in json.loads((out / "fabric.json").read_text())["nodes"]}
    assert cut <= got  # as the read-back wrote them
    assert cut <= {r.desc for r in netfile.node_records(netfile.read_net(net))}


def test_ibnetdiscover_of_a_live_ibsim_fabric_is_a_net_file_the_dry_run_takes(ibqos_cli, tmp_path, ibsim_fabric):
    """What an admin does to try a policy on the fabric at hand: `ibnetdiscover > fabric.net`.
    Here of a running ibsim dragonfly (3 switches a group, 4 groups): switches come first (the
    SM lands on a switch, not on the generator's first CA), `base port 0`, `switchguid=X(X)`,
    CA ports as `[1](guid)`, `# lid N 4xSDR` comments. The dry run passes on it, with every
    node and GUID ibsim gave the original."""
    from ibqos_sim.harness.topology import dragonfly

    orig = dragonfly(3, 2, 1, 4).write_net(tmp_path / "orig.net")
    with ibsim_fabric(orig, run_dir=tmp_path / "orig-run", console=False) as h:
        h.run_sm(engine="minhop")
        text = h.diag(["ibnetdiscover"]).stdout
    net = tmp_path / "discovered.net"
    net.write_text(text)
    records = list(netfile.node_records(text))
    assert records[0].kind == "SWITCH" and len(records) == 12 + 24, records[:2]
    assert {r.desc for r in records} == {r.name for r in netfile.node_records(orig.read_text())}
    out = tmp_path / "dr"
    r = ibqos_cli("dryrun", REPO_ROOT / "examples" / "four-class.yaml", "--net", net, "--out", out, timeout=600)
    assert r.returncode == 0, r.stderr[-1500:]
    checks = _checks(out)
    assert checks["routing engine"]["result"] == "dla"
    assert checks["every node of the net file discovered"]["result"] == "yes"
    assert checks["reachability"]["result"] == "552/552 CA pairs"
    # ibnetdiscover names each node by the GUID it found: ibsim gives it the same one again
    guids = {n["desc"]: int(n["guid"], 16) for n in json.loads((out / "fabric.json").read_text())["nodes"]}
    assert guids == {r.desc: int(r.name[2:], 16) for r in records}


def test_a_net_file_saved_with_crlf_runs_as_written(ibqos_cli, tmp_path):
    """A file saved on Windows ends its lines in CR LF; ibsim ends a line at LF and kept the
    CR in every description not in quotes (a CA record's `# oss01 HCA-1`). Before: the dry
    run failed 'every node of the net file discovered: 3 not reached by the SM' on the three
    CAs it had routed, read back as 'oss01 HCA-1\\r' (exit 1)."""
    text = re.sub(r'(Ca\t\d "H-[0-9a-f]+"\t\t)# "([^"]*)"\n', r"\1# \2\n", NET.read_text())
    assert text.count('"\t\t# node01 HCA-1 [mlx5_0]\n') == 1  # three CA records without quotes
    net = tmp_path / "windows.net"
    net.write_bytes(text.replace("\n", "\r\n").encode())
    out = tmp_path / "dr"
    r = _dryrun(ibqos_cli, net, out)
    assert r.returncode == 0, r.stderr[-1500:]
    assert _checks(out)["every node of the net file discovered"]["result"] == "yes"
    descs = {n["desc"] for n in json.loads((out / "fabric.json").read_text())["nodes"]}
    assert {"oss01 HCA-1", "node01 HCA-1 [mlx5_0]", LONG[:63]} <= descs


def test_a_net_file_with_a_byte_order_mark_before_its_first_record_runs_as_written(ibqos_cli, tmp_path):
    """An editor's UTF-8 byte-order mark, then the first Switch record at once. ibsim read the
    mark as part of the line and made no switch of it. Before: 'ibsim cannot build a fabric
    from this net file (check that both ends of every link agree)' (exit 2), no line, the run
    directory left behind."""
    text = NET.read_text()
    net = tmp_path / "bom.net"
    net.write_bytes(codecs.BOM_UTF8 + text[text.index('Switch\t36 "S-7cfe900300a5a2c0"') :].encode())
    out = tmp_path / "dr"
    r = _dryrun(ibqos_cli, net, out)
    assert r.returncode == 0, r.stderr[-1500:]
    assert _checks(out)["every node of the net file discovered"]["result"] == "yes"


@pytest.mark.parametrize(
    "switch_line, says",
    [
        ('[1]\t"h"[1]\t# "h" lid 2 1xSDR', "'s' port 1 runs 1x wide and 'h' port 1 (line 5) 4x"),
        ('[1]\t"h"[1] w=16', "'s' port 1 runs 2x wide and 'h' port 1 (line 5) 4x"),
        ('[1]\t"h"[1]\t# "h" lid 2 12xEDR', None),  # 12x also runs 4x
    ],
)
def test_a_width_one_end_cannot_run_against_ibsims_default_is_named(tmp_path, switch_line, says):
    """The other end states no width: ibsim gives it 4x (sim.h DEFAULT_LINKWIDTH), which a 1x
    or 2x end does not share (measured: 'ibpanic: get_active_linkwidth: mismatched enabled
    width ... W=1 and ... W=2', exit 3)."""
    net = tmp_path / "two.net"
    net.write_text(f'Switch\t2 "s"\n{switch_line}\n\nHca\t1 "h"\n[1]\t"s"[1]\n')
    if says is None:
        netfile.check_net(net)
        return
    with pytest.raises(InputError) as e:
        netfile.check_net(net)
    assert f":2: {says}: ibsim finds no width both ends take" in str(e.value), str(e.value)
