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
import os
import time
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import get_args, get_type_hints

from ..docfile import field_line, parse_json, write_atomic
from ..errors import ExternalError, InputError
from ..fabric.model import Fabric
from ..inputfile import decode
from . import state_schema
from .confset import state_file_mode
from .history import append

STATES = ("intent", "swapped", "swept", "verified")  # the forward path, in order
TERMINAL = ("verified", "standby", "rolled-back", "discarded")
KNOWN = (*STATES, "rollback", *TERMINAL[1:])  # every state a journal can hold


@dataclass
class Entry:
    state: str
    previous: str | None
    version: str
    opensm_pid: int
    log: str
    dumps: str = ""  # OpenSM's dump_files_dir, where the plugin's record says a sweep ended
    apply_pid: int = field(default_factory=os.getpid)
    time: float = field(default_factory=time.time)
    action: str = "apply"  # or "rollback" (ibqos rollback)
    plan_sha256: str | None = None  # of the version's plan.json
    who: str | None = None
    schema: str = state_schema.SCHEMA  # the journal's and history's (state_schema.py)

    @property
    def done(self) -> bool:
        return self.state in TERMINAL


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
                raise _Unfit(e.detail, e.line) from e
            state_schema.check(doc, self.path)
            return _entry(doc, text)
        except (ValueError, TypeError) as e:
            # written with write-fsync-rename, so this is damage from outside ibqos (a hand edit)
            where = f"{self.path}:{e.line}" if isinstance(e, _Unfit) and e.line else f"{self.path}"
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


_WORDS = {str: "a string", int: "an integer", float: "a number", type(None): "null"}


def _accepted(hint: object) -> tuple[tuple[type, ...], str]:
    """The JSON values a field of Entry takes, from its annotation, and their words: a float
    field takes any number (JSON's true is no PID: bool is refused apart)."""
    types = tuple(t for t in (get_args(hint) or (hint,)) if isinstance(t, type))
    return types + ((int,) if float in types else ()), " or ".join(_WORDS[t] for t in types)


# each field's JSON types as Entry declares them
_TYPES = {name: _accepted(hint) for name, hint in get_type_hints(Entry).items()}
_JSON_NAMES = {dict: "an object", list: "an array", str: "a string", int: "an integer", float: "a number"}


class _Unfit(ValueError):
    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


def _json_type(v: object) -> str:
    if v is None or isinstance(v, bool):
        return json.dumps(v)
    return _JSON_NAMES.get(type(v), type(v).__name__)


def unfit(doc: object, text: str) -> str | None:
    """Why `doc` (parsed from `text`) is no entry as ibqos writes one, or None: a line of
    history.jsonl is one too (history.events)."""
    try:
        _entry(doc, text)
    except _Unfit as e:
        return str(e)
    return None


def _entry(doc: object, text: str) -> Entry:
    """The journal's entry, or _Unfit naming the field (and its line) that is not as ibqos
    writes it: a hand edit ended in Python's words ('Entry() argument after ** must be a
    mapping, not list') or went through with a PID or a version that was no such thing."""
    if not isinstance(doc, dict):
        raise _Unfit(f"it holds {_json_type(doc)}, not the object ibqos writes", 1)
    for f in fields(Entry):
        if f.name not in doc and f.default is MISSING and f.default_factory is MISSING:
            raise _Unfit(f"field {f.name!r} is missing")
    for key, value in doc.items():
        line = field_line(text, (key,))
        if key not in _TYPES:
            raise _Unfit(f"field {key!r} is not one ibqos writes", line)
        types, words = _TYPES[key]
        if isinstance(value, bool) or not isinstance(value, types):
            raise _Unfit(f"field {key!r} is {_json_type(value)}, not {words}", line)
        if key == "state" and value not in KNOWN:
            raise _Unfit(f"field 'state' is {value!r:.40}, not one of {', '.join(KNOWN)}", line)
    return Entry(**doc)
