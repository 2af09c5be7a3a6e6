"""The record dla writes into OpenSM's dump_files_dir (record.c), /var/log by default, where
others than root may write: what is left at its temporary name is replaced, never written
through, and the record is written all the same."""

from __future__ import annotations

import json

import pytest
from dla_testlib import heavy_sweep, run_dla, start_dla
from ibqos_sim.harness.topology import dragonfly

pytestmark = pytest.mark.fabric

RECORD = "ibqos-dla.json"  # record.c's RECORD_FILE


@pytest.mark.parametrize("left", ["link", "file"])
def test_what_is_left_at_the_records_temporary_name_is_replaced_not_written_through(tmp_path, left, ibsim_fabric):
    """Before: a link there was followed, and OpenSM (root) wrote the record into the file it
    named ('precious' became the record's JSON), the link then renamed to the record's name.
    Now the link is removed, the file it names untouched, the record a file of its own."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    net = dragonfly(4, 2, 2).write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        dumps = h.run_dir / "sm" / "dumps"
        dumps.mkdir(parents=True)
        temp = dumps / f"{RECORD}.tmp"
        if left == "link":
            temp.symlink_to(victim)
        else:  # an earlier OpenSM killed between the write and the rename
            temp.write_text('{"half a record')
        run = run_dla(h, name="sm")
        record = dumps / RECORD
        assert victim.read_text() == "precious\n"
        assert not record.is_symlink() and json.loads(record.read_text())["engine"]["status"] == "routed"
        assert not temp.exists() and not temp.is_symlink()
        assert not [ln.text for ln in run.lines() if "D1A8" in ln.text]


def test_a_directory_at_the_records_name_is_said_once_and_opensm_routes_on(tmp_path, ibsim_fabric):
    """Before: a directory at dump_files_dir/ibqos-dla.json failed every write, and each said
    so: ERR D1A8 at a heavy sweep's start, after QoS setup and at SUBNET UP, 9 lines over 3
    sweeps. Now one line names the file and the reason once, dla routes every sweep, and
    nothing is left at the temporary name."""
    net = dragonfly(4, 2, 2).write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        dumps = h.run_dir / "sm" / "dumps"
        record = dumps / RECORD
        record.mkdir(parents=True)
        sm = start_dla(h, name="sm", conf={"sweep_interval": 0})
        try:
            for _ in range(2):
                heavy_sweep(sm)
            lines = sm.lines()
            left = sorted(p.name for p in dumps.iterdir() if p.name.startswith(RECORD))
            record.rmdir()
            heavy_sweep(sm)
            again = sm.lines()[len(lines) :]
            written = json.loads(record.read_text())
        finally:
            sm.stop()
    said = [ln.text for ln in lines if "D1A8" in ln.text]
    assert said == [
        f"ERR D1A8: dla: cannot write {record}: Is a directory; the record is not kept until it "
        "can be, OpenSM routes on (said once)"
    ]
    assert sum("dla tables configured on all switches" in ln.text for ln in lines) == 3
    assert left == [RECORD]
    assert [ln.text for ln in again if "D1A8" in ln.text or "written again" in ln.text] == [
        f"dla: {record} written again"
    ]
    assert written["engine"]["status"] == "routed" and written["subnet_up"] == 4
