"""ibqos.d/ as an earlier ibqos left it (manager/tests/upgrade/, written by that ibqos), read and
written by this one: an upgrade keeps what the earlier store meant, and what this ibqos writes
stays readable by the earlier one after a downgrade."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ibqos.apply.history import events
from ibqos.apply.journal import Entry, Journal

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
