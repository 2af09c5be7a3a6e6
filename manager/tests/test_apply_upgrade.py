"""ibqos.d/ as an earlier ibqos left it (manager/tests/upgrade/, written by that ibqos), read and
written by this one: an upgrade keeps what the earlier store meant, and what this ibqos writes
stays readable by the earlier one after a downgrade."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from ibqos.apply.confset import ConfigSet
from ibqos.apply.history import events
from ibqos.apply.journal import Journal
from ibqos.apply.journal_entry import Entry

UPGRADE = Path(__file__).with_name("upgrade")


def test_the_journal_stays_one_the_ibqos_before_its_schema_field_reads(tmp_path):
    """ebcda7c took a journal entry as Entry(**doc): a key it does not know (this ibqos's
    "schema") made it say 'unreadable apply journal' (exit 3) after a downgrade, for a journal
    that is version 1 like its own, and a killed apply could not be finished or undone."""
    old = json.loads((UPGRADE / "ebcda7c-journal.json").read_text())
    entry = Journal(tmp_path).write(Entry("intent", "v0002", "v0003", 1234, "/var/log/opensm.log"), "verified")
    written = json.loads((tmp_path / "journal.json").read_text())
    assert set(written) <= set(old), sorted(set(written) - set(old))
    # the history line (which that ibqos reads key by key) still names it
    assert [e["schema"] for e in events(tmp_path)] == ["ibqos.journal/1"]
    # and the earlier journal reads here as the version 1 it is
    shutil.copy(UPGRADE / "ebcda7c-journal.json", tmp_path / "journal.json")
    read = Journal(tmp_path).read()
    assert read is not None and read.version == old["version"] and read.schema == entry.schema


def _store_from_before_the_absent_mark(tmp: Path) -> tuple[ConfigSet, dict[str, Path]]:
    """772346f's store beside an etc/ of the admin's paths, each linked into current as its
    adopt() left them."""
    etc = tmp / "etc"
    etc.mkdir()
    state = etc / "ibqos.d"
    shutil.copytree(UPGRADE / "772346f-missing-qos-policy", state, symlinks=True)
    paths = {role: etc / role for role in json.loads((state / "paths.json").read_text())}
    for role, p in paths.items():
        p.symlink_to(state / "current" / role)
    return ConfigSet(paths, state), paths


def test_restoring_the_admins_files_from_before_the_absent_mark_leaves_the_missing_file_missing(tmp_path):
    """772346f stored the qos_policy_file the conf named but lacked (Debian's as shipped) empty
    in v0000, without the `absent` mark. Restored as a link to that empty file, OpenSM refused
    it: on OpenSM + ibsim with /etc/opensm/qos-policy.conf missing, this ibqos's 'rollback
    v0000' on 772346f's store exited 1 (ERR AC10: Default qos-level not defined; rolled back to
    v0002). Now the link goes, as for a marked version (exit 0, no OpenSM error)."""
    cs, paths = _store_from_before_the_absent_mark(tmp_path)
    assert cs.check("v0000") == [] and cs.check("v0001") == []  # as 772346f wrote them
    assert (cs.state / "v0000" / "qos-policy.conf").read_bytes() == b""
    assert cs.absent("v0000") == {"qos-policy.conf"} and cs.absent("v0001") == set()
    cs.flip("v0000")
    assert not os.path.lexists(paths["qos-policy.conf"])  # OpenSM runs without it again
    assert os.readlink(paths["opensm.conf"]) == str(cs.current / "opensm.conf")
    assert paths["plugin-tables.conf"].read_bytes() == (cs.state / "v0000" / "plugin-tables.conf").read_bytes()
    cs.flip("v0001")  # a plan's version holds it again
    assert paths["qos-policy.conf"].read_bytes() == (cs.state / "v0001" / "qos-policy.conf").read_bytes() != b""


def test_a_version_of_the_admins_files_says_what_is_absent_even_when_nothing_is(tmp_path):
    """So that the reading of an unmarked store above stays with stores from before the mark:
    an admin's own empty file (here the partitions), adopted now, is restored as it was."""
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "opensm.conf").write_text("qos TRUE\n")
    (etc / "partitions.conf").write_text("")
    cs = ConfigSet({"opensm.conf": etc / "opensm.conf", "partitions.conf": etc / "partitions.conf"}, etc / "ibqos.d")
    cs.adopt()
    assert cs.meta("v0000").absent == [] and cs.absent("v0000") == set()
    cs.flip("v0000")
    assert (etc / "partitions.conf").is_symlink() and (etc / "partitions.conf").read_bytes() == b""
