"""The group map dla stores in OpenSM's cache directory (dla_groupmap.h) is read back at every
sweep, so what an admin's editor, a full disk or a stray link leaves there is input dla must
survive: one line saying why the map is not read, groups discovered again, OpenSM routing with
dla, in bounded time and memory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from dla_testlib import heavy_sweep, refusals, run_dla, start_dla
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
    elif case == "nul_in_a_line":  # a good map with one byte zeroed (a crash, a broken disk)
        text = good.encode()
        at = text.index(b"\n", text.index(b"\n", text.index(b"\n") + 1) + 1) + 8
        path.write_bytes(text[:at] + b"\0" + text[at + 1 :])
    elif case == "control_byte":
        lines = good.splitlines(keepends=True)
        path.write_text("".join(lines[:2]) + lines[2].replace(" ", " \x1b[31m") + "".join(lines[3:]))
    elif case == "crlf":
        path.write_bytes(good.replace("\n", "\r\n").encode())
    elif case == "no_final_newline":
        path.write_text(good.rstrip("\n"))
    elif case == "switch_twice":
        path.write_text(good + "".join(f"{g} {(int(k) + 1) % 9}\n" for g, k in entries[:1]))
    elif case == "long_line":  # an entry padded past the 128 bytes a line may hold
        lines = good.splitlines(keepends=True)
        path.write_text("".join(lines[:2]) + " " * 120 + lines[2] + "".join(lines[3:]))
    elif case == "huge_file":
        path.write_text(good + "# padding\n" * 500_000)


# case -> what the one line says after 'not read: PATH' (None: the map is read, no line)
CASES = {
    "huge_group_numbers": f":1: group {BIG} is out of range (0-49150)",
    "empty": None,  # names no switch: discovery, as with none stored
    # before: ':1: line longer than 128 bytes' (a NUL ended fgets' string); and of a NUL in
    # a 22-byte line ':4: line longer than 128 bytes'
    "binary": ":1: NUL byte in column 1",
    "nul_in_a_line": ":4: NUL byte in column 8",
    "control_byte": ":3: control byte 0x1b in column 20 (only tab is allowed)",  # before: ':3: expected'
    "cut_mid_line": ":13: expected",  # a full disk's last line
    "directory": ": is a directory, not a regular file",
    "symlink_loop": ": cannot open: Too many levels of symbolic links",
    "negative_group": ":1: group '-1' is not a whole number (0-49150)",  # before: 'group 4294967295'
    "crlf": None,  # edited elsewhere: read as written
    "no_final_newline": None,
    # before: read, the last line for the switch won
    "switch_twice": ":39: switch 0x0000000000200000 is listed twice (first on line 3)",
    "long_line": ":3: line is longer than 128 bytes",
    "huge_file": ": file is 5000903 bytes, more than the 4194304 allowed",
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


def test_a_link_at_the_maps_temporary_name_is_replaced_not_kept(fabric, tmp_path):
    """Before: dla_groupmap_save opened the temporary name with O_NOFOLLOW and no O_EXCL: a
    link there failed every save ('group map not stored: ….tmp: Too many levels of symbolic
    links') and stayed for ever, the map never stored again; a hard link there had the file it
    shares truncated and overwritten. Now whatever is there is removed first, the map stored,
    nothing left at the temporary name, the linked file untouched."""
    h, good = fabric
    path = h.run_dir / GROUP_MAP
    temp = h.run_dir / f"{GROUP_MAP}.tmp"
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    path.unlink(missing_ok=True)
    temp.symlink_to(victim)
    run = run_dla(h, name="sm-temp-link")
    assert not [ln.text for ln in run.lines() if "group map not stored" in ln.text]
    assert victim.read_text() == "precious\n"
    assert not temp.exists() and not temp.is_symlink()
    assert not path.is_symlink() and sorted(path.read_text().splitlines()) == sorted(good.splitlines())


def test_a_map_that_cannot_be_replaced_is_said_once_not_every_sweep(fabric):
    """A directory at the map's name cannot be read nor replaced. Before: 'not read' and 'not
    stored' at every heavy sweep, 4 lines over 3 sweeps (an unchanged fabric keeps its routes,
    and its groups are stored again). Now each once, dla routes every sweep, and nothing is
    left at the temporary name."""
    h, _good = fabric
    path = h.run_dir / GROUP_MAP
    spoil(path, "directory", "")
    sm = start_dla(h, name="sm-map-directory", conf={"sweep_interval": 0})
    try:
        heavy_sweep(sm)
        heavy_sweep(sm)
        lines = sm.lines()
    finally:
        sm.stop()
        path.rmdir()
    said = [ln.text for ln in lines if NOT_READ in ln.text or "group map not stored" in ln.text]
    assert said == [
        f"{NOT_READ}{path}: is a directory, not a regular file",
        f"dla: group map not stored: {path}: Is a directory",
    ]
    assert sum("dla tables configured on all switches" in ln.text for ln in lines) == 3
    assert not (h.run_dir / f"{GROUP_MAP}.tmp").exists()
