"""The table file inside a real OpenSM (issue 13, items 4-9): paths and bytes that used to block
the sweep, grow OpenSM or pass the checker and then take dla down are rejected whole (ERR D1A3,
one printable `file:line` message, identical to ibqos-tablecheck's), and dla keeps routing."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from dla_testlib import TABLES_REJECTED, refusals, run_dla
from ibqos import paths
from ibqos.fabric.dumps import load_dumps
from ibqos_sim.harness import Harness
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly

pytestmark = pytest.mark.fabric

BAD = {
    # issue 13 item 8: main's checker passed this and the plugin refused the fabric (D1A2)
    "class7": b"version 1\nsl2class 0,1,2,3,4,5,6,7,0,0,0,0,0,0,0,0\n",
    # item 7: main dropped the rest of the line after the NUL
    "nul": b"version 1\nvlarb global high 0:1 low - limit 1\0 low 9:9\n",
    # item 9: raw bytes went into osm.log
    "raw": b"version 1\nvlarb \xc3\xa9\xff high 0:1 low - limit 1\n",
    "control": b"version 1\n# \x1b[2J\n",
    "pattern": b"version 1\ngroup_pattern (x)a+++++++++++++++++++++++++\n",
}


def tablecheck(path) -> tuple[int, bytes]:
    exe = paths.plugin_dir() / "ibqos-tablecheck"
    cp = subprocess.run([str(exe), str(path)], capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    return cp.returncode, cp.stderr


def rejections(run) -> list[str]:
    return [m.group(1) for ln in run.lines() if (m := TABLES_REJECTED.search(ln.text))]


def d1a3_lines(run) -> list[bytes]:
    return [ln for ln in run.log.read_bytes().splitlines() if b"ERR D1A3" in ln]


@pytest.fixture(scope="module")
def fabric(tmp_path_factory):
    d = tmp_path_factory.mktemp("tables-safety")
    net = dragonfly(*DRAGONFLY_SIZES[72]).write_net(d / "fabric.net")
    with Harness(net, run_dir=d / "run") as h:
        yield h, d


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_file_rejected_whole_with_the_checkers_message(fabric, case):
    h, d = fabric
    path = d / f"{case}.tables"
    path.write_bytes(BAD[case])
    rc, err = tablecheck(path)
    assert rc == 2
    run = run_dla(h, tables=path, check=False, timeout=60)
    assert run.configured_engines() == ["dla"], refusals(run.lines())
    assert not refusals(run.lines())
    raw = d1a3_lines(run)
    assert len(raw) == 1 and all(0x20 <= b < 0x7F for b in raw[0]), raw
    # one validation path: the plugin logs exactly what the checker prints
    assert rejections(run) == [err.decode().rstrip("\n")]


def test_fifo_and_device_do_not_block_or_grow_opensm(fabric):
    h, d = fabric
    fifo = d / "tables.fifo"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a FIFO"), ("/dev/zero", "a character device")):
        # main blocked in fopen() on the FIFO (no SUBNET UP) and grew to GBs on /dev/zero
        run = run_dla(h, tables=path, check=False, timeout=60)
        assert rejections(run) == [f"{path}:0: is {kind}, not a regular file"]
        assert run.configured_engines() == ["dla"]
        assert run.wall_s < 30


def test_new_directives_are_accepted(fabric):
    h, d = fabric
    path = d / "groups.tables"
    path.write_text(
        "version 1\nvls_per_class 2\nsl2class 0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0\n"
        "group 0x0002c903000a1b2c g1\ngroup_pattern ^sw-g(?<group>\\d+)-s\\d+$\n"
    )
    assert tablecheck(path) == (0, b"")
    run = run_dla(h, tables=path, check=False, timeout=60)
    assert rejections(run) == []
    assert run.configured_engines() == ["dla"]
    # accepted means in force, not only parsed: the groups come from the pattern (the GUID
    # pin names no switch of this fabric), and SL1 is class 1, on VLs 2 and 3
    record = json.loads((run.dumps / "ibqos-dla.json").read_text())
    assert record["table_file"] == {"status": "applied", "path": str(path)}
    assert record["groups"]["source"] == "pinned by the table file"
    live = load_dumps(run.dumps)
    assert {vls[1] for ca in live.cas() for vls in ca.sl2vl.values()} == {2}
    on_switches = {vls[1] for sw in live.switches() for vls in sw.sl2vl.values()}
    assert on_switches == {2, 3}, on_switches
    assert {vls[0] for sw in live.switches() for vls in sw.sl2vl.values()} == {0, 1}
