"""Every artefact ibqos writes (plan.json, fabric.json, report.json, simulation.json, results,
configuration) goes through `ibqos.docfile.write_atomic`: temp file, fsync, rename."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import pytest
from ibqos.docfile import write_atomic, write_json
from ibqos.fabric.model import Fabric, Node, Port

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = [ROOT / "manager" / "ibqos", ROOT / "manager" / "ibqos_app", ROOT / "ci-sim" / "ibqos_sim"]
PRODUCT += [ROOT / "testbed" / "ibqos_testbed", ROOT / "bench"]
# Not artefacts: scratch files for `opensm -c` / ibqos-tablecheck in a private temp dir, and
# the empty capture files a perftest child then writes its own output into.
SCRATCH = {
    ("manager/ibqos_app/apply/run.py", 'conf.write_bytes(osmconf.to_bytes(self.s.files["opensm.conf"]))'),
    ("manager/ibqos_app/apply/run.py", 'tables.write_text(self.s.files["plugin-tables.conf"])'),
    # a kernel control file, written to reset the peak-RSS mark (proc(5)), not an artefact
    ("bench/scale.py", 'Path("/proc/self/clear_refs").write_text("5")  # Linux >= 4.0: VmHWM := current RSS'),
    ("testbed/ibqos_testbed/runner.py", '(self.dir / rel).write_bytes(b"")  # an interrupted earlier run\'s leftovers'),
}
# Opening for append is a daemon's log, not an artefact.
WRITER = re.compile(r"\.write_text\(|\.write_bytes\(|\.savefig\((?!buf)|json\.dump\(|open\([^)]*['\"]wb?['\"]")


def test_no_writer_bypasses_the_helper():
    bad = []
    for top in PRODUCT:
        for f in top.rglob("*.py"):
            rel = str(f.relative_to(ROOT))
            if rel == "manager/ibqos/docfile.py":
                continue
            for n, line in enumerate(f.read_text().splitlines(), 1):
                if WRITER.search(line) and (rel, line.strip()) not in SCRATCH:
                    bad.append(f"{rel}:{n}: {line.strip()}")
    assert not bad, bad


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "plan.json"
    write_json(path, {"v": 1})
    os.chmod(path, 0o640)

    def fail(fd):
        raise OSError(5, "I/O error")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError):
        write_json(path, {"v": 2})
    monkeypatch.undo()
    assert path.read_text() == '{\n "v": 1\n}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]
    write_atomic(path, b"\x00new")
    assert path.read_bytes() == b"\x00new" and path.stat().st_mode & 0o777 == 0o640  # mode kept


def test_the_file_is_fsynced_before_the_rename(tmp_path, monkeypatch):
    order = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (order.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (order.append("rename"), real_replace(a, b))[1])
    f = Fabric(nodes={1: Node(guid=1, kind="ca", desc="h", nports=1, ports={1: Port(num=1, lid=1)})})
    f.save(tmp_path / "fabric.json")
    assert order == ["fsync", "rename", "fsync"]  # the file, the rename, the directory
    assert Fabric.load(tmp_path / "fabric.json").nodes[1].ports[1].lid == 1


def test_an_output_that_is_a_symlink_writes_the_file_it_names(tmp_path):
    """redfiles: the rename replaced the link itself with a regular file and left the file it
    named as it was: as root, `ibqos plan p.yaml -o /dev/stdout > plan.json` replaced the
    system's /dev/stdout symlink with the plan (measured here, then restored) and wrote
    nothing to plan.json. The output is the file the link names; the link stays."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "plan.json"
    target.write_text("old\n")
    target.chmod(0o640)
    link = tmp_path / "plan.json"
    link.symlink_to(target)
    write_atomic(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new\n" and (target.stat().st_mode & 0o777) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["elsewhere", "plan.json"]
    assert sorted(p.name for p in elsewhere.iterdir()) == ["plan.json"]  # no temp file left
    dangling = tmp_path / "new.json"
    dangling.symlink_to(elsewhere / "created.json")  # config management's link, file not yet there
    write_atomic(dangling, "x\n")
    assert dangling.is_symlink() and (elsewhere / "created.json").read_text() == "x\n"


def test_an_output_link_that_is_a_loop_is_refused_and_stays_a_link(tmp_path):
    """A link that names no file because it leads back to itself (a -> b -> a, an admin's
    slip): write_atomic replaced the link with a plain file, silently cutting it from where it
    was meant to point. A dangling link's file is made (above); a loop is refused, ELOOP."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.symlink_to(b)
    b.symlink_to(a)
    with pytest.raises(OSError) as e:
        write_atomic(a, "x\n")
    assert e.value.errno == errno.ELOOP and e.value.filename == str(a)
    assert a.is_symlink() and b.is_symlink() and os.readlink(a) == str(b)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json"]  # no temp file left
