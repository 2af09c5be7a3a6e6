"""The group map dla stores in OpenSM's cache directory (dla_groupmap.h) is read back at every
sweep, so what an admin's editor, a full disk or a stray link leaves there is input dla must
survive: one line saying why the map is not read, groups discovered again, OpenSM routing with
dla, in bounded time and memory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dla_testlib import refusals, run_dla, start_dla
from ibqos_sim.harness import Harness
from ibqos_sim.harness.topology import dragonfly

pytestmark = pytest.mark.fabric

GROUP_MAP = "ibqos-dla-groups"  # dla_groupmap.h: the map a sweep stores in OSM_CACHE_DIR
NOT_READ = "dla: stored group map not read: "
BIG = 500_000_000  # a group number no map dla wrote holds (a 36-switch fabric has 9 groups)


@pytest.fixture(scope="module")
def fabric(tmp_path_factory):
    d = tmp_path_factory.mktemp("group-map")
    net = dragonfly(4, 2, 2).write_net(d / "fabric.net")
    with Harness(net, run_dir=d / "run") as h:
        run_dla(h)  # stores the map the cases below spoil
        yield h, (h.run_dir / GROUP_MAP).read_text()


def spoil(path: Path, case: str, good: str) -> None:
    entries = [ln.split() for ln in good.splitlines() if not ln.startswith("#")]
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        path.rmdir()
    if case == "huge_group_numbers":
        path.write_text("".join(f"{g} {int(k) + BIG}\n" for g, k in entries))
    elif case == "empty":
        path.write_bytes(b"")
    elif case == "binary":
        path.write_bytes(bytes(range(256)) * 4)
    elif case == "cut_mid_line":
        lines = good.splitlines(keepends=True)
        path.write_text("".join(lines[:12]) + lines[12][:9])
    elif case == "directory":
        path.mkdir()
    elif case == "symlink_loop":
        path.symlink_to(path.name)
    elif case == "negative_group":
        path.write_text("".join(f"{g} -{int(k) + 1}\n" for g, k in entries))


# case -> what the one line says after 'not read: PATH' (None: the map is read, no line)
CASES = {
    "huge_group_numbers": f":1: group {BIG} is out of range (0-49150)",
    "empty": None,  # names no switch: discovery, as with none stored
    "binary": ":1: line longer than 128 bytes",  # a NUL ends fgets' string,
    "cut_mid_line": ":13: expected",  # a full disk's last line
    "directory": ": not a regular file",
    "symlink_loop": ": Too many levels of symbolic links",
    "negative_group": ":1: group 4294967295 is out of range",
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_spoilt_group_map_is_named_once_and_dla_routes(fabric, case):
    """Before: a map whose groups were numbered from 500000000 (the switches' grouping intact)
    held OpenSM's sweep 13 s (5 s of CPU) and 1.96 GB at its peak on 36 switches
    (dla_groups_from_labels sized a table by the largest number; 8 GB at 2000000000), and no
    line said why. Now the map is not read, in one line, and dla discovers the groups."""
    h, good = fabric
    path = h.run_dir / GROUP_MAP
    spoil(path, case, good)
    sm = start_dla(h, name=f"sm-{case}")
    try:
        status = Path(f"/proc/{sm.pid}/status").read_text().splitlines()
        peak_kb = next(int(ln.split()[1]) for ln in status if ln.startswith("VmHWM:"))
        lines = sm.lines()
    finally:
        sm.stop()
    said = [ln.text for ln in lines if NOT_READ in ln.text]
    want = CASES[case]
    if want is None:
        assert said == []
    else:
        assert len(said) == 1, said
        assert said[0].startswith(f"{NOT_READ}{path}{want}"), said[0]
    assert not refusals(lines)
    assert any("dla tables configured on all switches" in ln.text for ln in lines)
    assert any("dla: 9 groups (" in ln.text for ln in lines)
    assert peak_kb < 256 * 1024, f"OpenSM peaked at {peak_kb} kB"
    if os.path.isfile(path) and not os.path.islink(path):
        assert sorted(path.read_text().splitlines()) == sorted(good.splitlines())
