"""The apply journal: where an `ibqos apply` got to, durable before each step it describes.

    intent    the new version is staged; the paths may already read it (crash during flip)
    swapped   every path reads the new version; OpenSM may still run the old one
    swept     OpenSM finished a heavy sweep with the new files; not yet read back
    verified  the fabric was read back equal to the plan           (terminal)
    rollback  restoring `previous` after a failure                  (until it is done)
    standby   swapped on a standby SM's host (apply --standby): no sweep (terminal)
    rolled-back / discarded                                         (terminal)

Every end state (verified, rolled-back, discarded) is also appended to `history.jsonl`
(history.py), the record `ibqos history` reads.

A process killed at any point leaves one of these in `ibqos.d/journal.json` and its lock
released; the next `ibqos apply` or `ibqos status --opensm-conf` finishes or undoes the work
(`recover.py`). The fabric read back before the flip is kept beside it, so a rollback done by
a later process can still prove the fabric is back as it was.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

from ..docfile import parse_json, write_atomic
from ..errors import ExternalError, InputError
from ..fabric.model import Fabric
from ..inputfile import decode
from . import state_schema
from .confset import state_file_mode
from .history import append
from .journal_entry import Entry, Unfit, parse_entry


class Journal:
    def __init__(self, state_dir: Path):
        self.path = state_dir / "journal.json"
        self.before_path = state_dir / "journal.before.json"

    def read(self) -> Entry | None:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            try:
                text = decode(raw, self.path)
                doc = parse_json(text, self.path)
            except InputError as e:  # not UTF-8, not JSON: said as every reader says it, with its line
                raise Unfit(e.detail, e.line) from e
            state_schema.check(doc, self.path)
            return parse_entry(doc, text)
        except (ValueError, TypeError) as e:
            # written with write-fsync-rename, so this is damage from outside ibqos (a hand edit)
            where = f"{self.path}:{e.line}" if isinstance(e, Unfit) and e.line else f"{self.path}"
            raise ExternalError(
                f"{where}: unreadable apply journal ({e}); inspect it and the ibqos.d/current link, then remove it"
            ) from e

    def write(self, entry: Entry, state: str) -> Entry:
        entry.state = state
        entry.time = time.time()
        doc = asdict(entry)
        if doc["schema"] == state_schema.FIRST:
            # version 1 is what a journal without the field is (state_schema), and ibqos from
            # before the field refuses any field it does not know: after a downgrade it called the
            # journal unreadable (exit 3) and could not finish or undo a killed apply
            del doc["schema"]
        write_atomic(self.path, json.dumps(doc, indent=1) + "\n", mode=state_file_mode(self.path.parent))
        if entry.done:
            append(self.path.parent, asdict(entry))
        return entry

    def save_before(self, fabric: Fabric) -> None:
        fabric.save(self.before_path, mode=state_file_mode(self.path.parent))

    def load_before(self) -> Fabric | None:
        try:
            return Fabric.from_json(self.before_path.read_text())
        except (OSError, ValueError):
            return None
