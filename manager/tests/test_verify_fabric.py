"""`ibqos verify` on real OpenSM routing of ibsim fabrics, cross-checked with ibdmchk."""

from __future__ import annotations

import itertools
import json
import re
import shutil
from pathlib import Path

import pytest
from ibqos.fabric.dumps import load_dumps
from ibqos.verify import iter_routes, verify_fabric
from ibqos.verify.ibdmchk import run_ibdmchk
from ibqos.verify.pathsl import PATH_SL_FILE, read_path_sls, write_path_sls
from ibqos.verify.sa_paths import query_path_sls
from ibqos_sim.harness import Harness
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly, fat_tree

pytestmark = pytest.mark.fabric


def _run(tmp_path: Path, topo, engine: str) -> Path:
    net = topo.write_net(tmp_path / "fabric.net")
    with Harness(net, run_dir=tmp_path / "run") as h:
        return h.run_sm(engine=engine, conf={"qos": "TRUE"}).dumps


def _witness_is_real(fabric, cycle: list[str]) -> None:
    """Each channel of the witness must be followed by the next on some actual route."""
    name = {n.guid: n.desc for n in fabric.switches()}
    follows = set()
    for _, _, hops in iter_routes(fabric):
        chans = [f"{name[g]}:{o}/{vl}" for g, _, o, vl in hops]
        follows.update(itertools.pairwise(chans))
    for k, c in enumerate(cycle):
        assert (c, cycle[(k + 1) % len(cycle)]) in follows, (c, cycle[(k + 1) % len(cycle)])


def test_minhop_dragonfly72_has_a_credit_loop_and_ibdmchk_agrees(ibqos_cli, tmp_path):
    dumps = _run(tmp_path, dragonfly(*DRAGONFLY_SIZES[72]), "minhop")

    cp = ibqos_cli("verify", tmp_path / "run")  # the harness run dir: finds sm0/dumps
    assert cp.returncode == 1, cp.stderr
    assert "verdict: DEFECT: credit loop" in cp.stdout
    assert "delivered: 5112/5112" in cp.stdout

    cp = ibqos_cli("verify", dumps, "--json")
    assert cp.returncode == 1
    doc = json.loads(cp.stdout)
    assert doc["ok"] is False and doc["cdg_acyclic"] is False
    assert doc["unreachable"] == 0 and doc["loops"] == 0 and doc["vls_used"] == [0]
    cycle = doc["cycle"]
    assert len(cycle) >= 3 and all(c.startswith("sw-g") and c.endswith("/0") for c in cycle)
    fabric = load_dumps(dumps)
    _witness_is_real(fabric, cycle)
    assert len(doc["cycle_routes"]) == len(cycle) and "?" not in doc["cycle_routes"]

    cross = run_ibdmchk(dumps, fabric, tmp_path / "ibdmchk")
    assert cross.credit_loops and cross.loop
    # ibdmchk counts CA links too: its hop count is ours + 2. Same routes, same histogram.
    assert cross.hop_histogram == {h + 2: n for h, n in doc["hops"].items() for h in [int(h)]}

    cp = ibqos_cli("verify", dumps, "--ibdmchk")
    assert cp.returncode == 1 and "ibdmchk: credit loops" in cp.stdout and "agrees" in cp.stdout


def test_minhop_fat_tree_is_clean_and_ibdmchk_agrees(ibqos_cli, tmp_path):
    dumps = _run(tmp_path, fat_tree(leaves=4, spines=2, hosts=4), "minhop")
    cp = ibqos_cli("verify", dumps, "--ibdmchk")
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert "acyclic" in cp.stdout and "ibdmchk: no credit loops" in cp.stdout
    assert "agrees" in cp.stdout
    assert "delivered: 240/240" in cp.stdout


@pytest.mark.parametrize("engine", ["lash", "dfsssp"])
def test_path_sls_from_the_sa_break_the_loop_for_both_tools(ibqos_cli, tmp_path, engine, ibsim_fabric):
    net = dragonfly(*DRAGONFLY_SIZES[72]).write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        sm = h.start_sm(engine=engine, conf={"qos": "TRUE"})
        fabric = load_dumps(sm.dumps)
        psl = query_path_sls(fabric, h.env)
        sm.stop()
    assert len(psl.by_lids) == 72 * 71
    assert len(set(psl.by_lids.values())) > 1  # the engine spreads paths over SLs

    with_sls = verify_fabric(fabric, path_sls=psl)
    assert with_sls.ok and len(with_sls.sls_used) > 1
    assert run_ibdmchk(sm.dumps, fabric, tmp_path / "c1", path_sls=psl).credit_loops is False

    # Everything on SL 0 instead: both tools find that the same routes loop.
    sl0 = verify_fabric(fabric)
    assert not sl0.cdg_acyclic
    assert run_ibdmchk(sm.dumps, fabric, tmp_path / "c2").credit_loops is True

    # Saved next to the dumps, the SLs are picked up by the command.
    write_path_sls(sm.dumps / PATH_SL_FILE, psl, fabric)
    assert read_path_sls(sm.dumps / PATH_SL_FILE, fabric).by_lids == psl.by_lids
    cp = ibqos_cli("verify", sm.dumps, "--ibdmchk")
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert "path SLs:" in cp.stdout and "agrees" in cp.stdout


def test_lmc_every_lid_of_a_port_is_routed_and_checked(ibqos_cli, tmp_path):
    """redteam: with LMC 1 a port owns two LIDs, each routed by the LFTs on its own. Only the
    base LIDs were checked: a leaf whose entry for a CA's second LID points back up (a loop
    between the leaf and the spine) passed as clean, exit 0."""
    net = fat_tree(leaves=2, spines=1, hosts=2).write_net(tmp_path / "fabric.net")
    with Harness(net, run_dir=tmp_path / "run") as h:
        dumps = h.run_sm(engine="minhop", conf={"qos": "TRUE", "lmc": 1}).dumps
    cp = ibqos_cli("verify", dumps, "--json")
    assert cp.returncode == 0, cp.stdout + cp.stderr
    report = json.loads(cp.stdout)
    assert report["pairs"] == report["delivered"] == 2 * 4 * 3  # every (source, destination LID)
    assert "LMC 1: 2 LIDs per CA port; the routes to each are checked (pairs counts them)" in report["warnings"]

    fabric = load_dumps(dumps)
    ca = next(n for n in fabric.cas() if n.desc == "ca-l1-h0")
    leaf_guid, _ = ca.ports[1].remote
    second = ca.ports[1].lid + 1
    up = next(
        num
        for num, p in fabric.nodes[leaf_guid].ports.items()
        if num and p.remote and fabric.nodes[p.remote[0]].kind == "switch"
    )
    bad = tmp_path / "bad"
    shutil.copytree(dumps, bad)
    text = (bad / "opensm-lfts.dump").read_text()
    head = f"guid 0x{leaf_guid:016x} "
    before, section = text.split(head, 1)
    section, n = re.subn(rf"(?m)^0x{second:04x} \d{{3}}", f"0x{second:04x} {up:03d}", section, count=1)
    assert n == 1, "no LFT entry for the second LID on the leaf"
    (bad / "opensm-lfts.dump").write_text(before + head + section)
    cp = ibqos_cli("verify", bad, "--json")
    assert cp.returncode == 1, cp.stdout + cp.stderr
    report = json.loads(cp.stdout)
    assert report["lost"] == {"loop": 3} and report["delivered"] == report["pairs"] - 3, report


def test_bad_rundir_is_one_line_exit_2(ibqos_cli, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    cp = ibqos_cli("verify", empty)
    assert cp.returncode == 2 and cp.stdout == ""
    assert cp.stderr.count("\n") == 1 and "opensm-subnet.lst" in cp.stderr

    dumps = _run(tmp_path, dragonfly(*DRAGONFLY_SIZES[72]), "minhop")
    bad = tmp_path / "garbled"
    shutil.copytree(dumps, bad)
    lines = (bad / "opensm-lfts.dump").read_text().splitlines()
    lines[5] = "0x00zz garbage"
    (bad / "opensm-lfts.dump").write_text("\n".join(lines) + "\n")
    cp = ibqos_cli("verify", bad)
    assert cp.returncode == 2 and cp.stdout == ""
    assert cp.stderr.count("\n") == 1 and "opensm-lfts.dump:6:" in cp.stderr

    (bad / "opensm-lfts.dump").unlink()
    cp = ibqos_cli("verify", bad)
    assert cp.returncode == 2 and "opensm-lfts.dump" in cp.stderr and "Traceback" not in cp.stderr

    cp = ibqos_cli("verify", dumps, "--path-sl", tmp_path / "nope")
    assert cp.returncode == 2 and cp.stderr.count("\n") == 1
    # redteam: a capture that came back empty (or only comments) judged every pair on SL 0,
    # under a layered engine (dfsssp, lash) a false credit loop, exit 1, blamed on the fabric
    for text in ("", "# saquery timed out\n"):
        (tmp_path / "psl").write_text(text)
        cp = ibqos_cli("verify", dumps, "--path-sl", tmp_path / "psl")
        assert cp.returncode == 2 and cp.stderr.count("\n") == 1, cp.stderr
        assert f"{tmp_path / 'psl'}: no path SLs in it" in cp.stderr


def test_live_verify_asks_the_sa_for_path_sls(ibqos_cli, tmp_path, ibsim_fabric):
    net = dragonfly(*DRAGONFLY_SIZES[72]).write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        h.start_sm(engine="lash", conf={"qos": "TRUE"})
        live = ibqos_cli("verify", "--live", "--json", env=h.env)
        sl0 = ibqos_cli("verify", "--live", "--sl", "0", env=h.env)
    assert live.returncode == 0, live.stdout + live.stderr
    doc = json.loads(live.stdout)
    assert doc["sl_source"].startswith("SA path records (5112 pairs")
    assert doc["source"].startswith("live:") and len(doc["sls_used"]) > 1
    assert sl0.returncode == 1 and "credit loop" in sl0.stdout


def test_path_sls_of_another_fabric_are_refused_not_read_as_sl_0(ibqos_cli, tmp_path):
    """redfiles: a saquery capture none of whose paths joins two CA ports of the fabric (taken
    on another subnet, or before the LIDs changed) was read, and every pair silently fell back
    to SL 0, as an empty capture did (exit 0 here; under a layered engine a false credit
    loop). One path of the fabric's makes the file usable."""
    dumps = _run(tmp_path, fat_tree(leaves=2, spines=1, hosts=2), "minhop")
    fabric = load_dumps(dumps)
    lids = sorted(p.lid for n in fabric.cas() for p in n.ports.values() if p.num and p.lid)
    record = (
        "PathRecord dump:\n\t\tslid....................{s:#06x}\n"
        "\t\tdlid....................{d:#06x}\n\t\tsl......................0x1\n"
    )
    psl = tmp_path / "psl"
    psl.write_text(record.format(s=0x101, d=0x102) + record.format(s=lids[0], d=0x999))
    cp = ibqos_cli("verify", dumps, "--path-sl", psl)
    assert cp.returncode == 2 and cp.stdout == "" and cp.stderr.count("\n") == 1, cp.stdout + cp.stderr
    assert cp.stderr.startswith(f"ibqos: error: {psl}: none of its 2 paths joins two CA ports of this"), cp.stderr
    psl.write_text(psl.read_text() + record.format(s=lids[0], d=lids[1]))
    cp = ibqos_cli("verify", dumps, "--path-sl", psl)
    assert cp.returncode == 0 and "SLs used 0,1," in cp.stdout, cp.stdout + cp.stderr


def test_path_sl_numbers_neither_decimal_nor_hex_are_named_at_their_line(ibqos_cli, tmp_path):
    """hostile36: a number with a leading 0 ('05', octal to C's strtoul) in a path-SL file ended
    in 'internal error: ValueError: invalid literal for int() with base 0' (exit 70), in either
    format; a Unicode digit ('\u0663') was read as the SL it looks like. Now one line naming the
    file, the line and the field, exit 2."""
    dumps = _run(tmp_path, fat_tree(leaves=2, spines=1, hosts=2), "minhop")
    fabric = load_dumps(dumps)
    ca = next(n for n in fabric.cas())
    psl = tmp_path / "psl"
    cases = [
        (f"0x{ca.guid:016x} 05 1\n", ":1: dlid: '05' is not a number ibqos reads"),
        ("PathRecord dump:\n\t\tslid....................0x0005\n\t\tdlid....................007\n", ":3: dlid: '007'"),
        (f"0x{ca.guid:016x} 5 \u0663\n", ":1: expected '<src node GUID> <dlid> <sl>'"),
    ]
    for text, says in cases:
        psl.write_text(text)
        cp = ibqos_cli("verify", dumps, "--path-sl", psl)
        assert cp.returncode == 2 and cp.stderr.count("\n") == 1, cp.stdout + cp.stderr
        assert cp.stderr.startswith(f"ibqos: error: {psl}{says}"), cp.stderr
