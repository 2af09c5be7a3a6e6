"""The schema of ibqos.d's journal and history lines (`ibqos.journal/N`): each entry names
the one it was written with, so an ibqos meeting a file from a newer ibqos (after a
downgrade, or a second installation on the SM host) says so and changes nothing, instead of
calling it damage. Entries without one were written before it was recorded: version 1. The
journal names only a later one (journal.Journal.write): ibqos from before the field reads no
journal that has it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import InputError

NAME = "ibqos.journal"
VERSION = 1
SCHEMA = f"{NAME}/{VERSION}"
FIRST = f"{NAME}/1"  # what an entry without the field is; the journal writes it only from /2 on


def check(doc: Any, file: Path, line: int | None = None) -> None:
    """Refuse (exit 2, nothing changed) an entry of a schema this ibqos does not read."""
    schema = doc.get("schema", FIRST) if isinstance(doc, dict) else FIRST
    m = re.fullmatch(rf"{re.escape(NAME)}/(\d+)", str(schema))
    if m and int(m.group(1)) <= VERSION:
        return
    why = "written by a newer ibqos" if m else "not an ibqos journal entry"
    raise InputError(
        f"schema {str(schema)!r}: {why}; this ibqos reads {SCHEMA}: nothing changed (use the ibqos that wrote it)",
        file=file,
        line=line,
    )
