"""The schema of ibqos.d's journal and history lines (`ibqos.journal/N`): each entry names
the one it was written with, so an ibqos meeting a file from a newer ibqos (after a
downgrade, or a second installation on the SM host) says so and changes nothing, instead of
calling it damage. Entries without one were written before it was recorded: version 1."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import InputError

NAME = "ibqos.journal"
VERSION = 1
SCHEMA = f"{NAME}/{VERSION}"


def check(doc: Any, file: Path, line: int | None = None) -> None:
    """Refuse (exit 2, nothing changed) an entry of a schema this ibqos does not read."""
    schema = doc.get("schema", SCHEMA) if isinstance(doc, dict) else SCHEMA
    m = re.fullmatch(rf"{re.escape(NAME)}/(\d+)", str(schema))
    if m and int(m.group(1)) <= VERSION:
        return
    why = "written by a newer ibqos" if m else "not an ibqos journal entry"
    raise InputError(
        f"schema {str(schema)!r}: {why}; this ibqos reads {SCHEMA}: nothing changed (use the ibqos that wrote it)",
        file=file,
        line=line,
    )
