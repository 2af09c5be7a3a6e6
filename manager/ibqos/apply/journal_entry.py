"""One apply journal entry: its fields, the states it can hold, and the check that a document
(`ibqos.d/journal.json`, or a line of `history.jsonl`) is one as ibqos writes it. Apart from
journal.py, which writes entries and appends the finished ones to history.jsonl, so that the
history's reader can check its lines without importing the journal's writer (a cycle)."""

from __future__ import annotations

import json
import os
import time
from dataclasses import MISSING, dataclass, field, fields
from typing import get_args, get_type_hints

from ..docfile import field_line
from . import state_schema

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


_WORDS = {str: "a string", int: "an integer", float: "a number", type(None): "null"}


def _accepted(hint: object) -> tuple[tuple[type, ...], str]:
    """The JSON values a field of Entry takes, from its annotation, and their words: a float
    field takes any number (JSON's true is no PID: bool is refused apart)."""
    types = tuple(t for t in (get_args(hint) or (hint,)) if isinstance(t, type))
    return types + ((int,) if float in types else ()), " or ".join(_WORDS[t] for t in types)


# each field's JSON types as Entry declares them
_TYPES = {name: _accepted(hint) for name, hint in get_type_hints(Entry).items()}
_JSON_NAMES = {dict: "an object", list: "an array", str: "a string", int: "an integer", float: "a number"}


class Unfit(ValueError):
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
        parse_entry(doc, text)
    except Unfit as e:
        return str(e)
    return None


def parse_entry(doc: object, text: str) -> Entry:
    """The journal's entry, or Unfit naming the field (and its line) that is not as ibqos
    writes it: a hand edit ended in Python's words ('Entry() argument after ** must be a
    mapping, not list') or went through with a PID or a version that was no such thing."""
    if not isinstance(doc, dict):
        raise Unfit(f"it holds {_json_type(doc)}, not the object ibqos writes", 1)
    for f in fields(Entry):
        if f.name not in doc and f.default is MISSING and f.default_factory is MISSING:
            raise Unfit(f"field {f.name!r} is missing")
    for key, value in doc.items():
        line = field_line(text, (key,))
        if key not in _TYPES:
            raise Unfit(f"field {key!r} is not one ibqos writes", line)
        types, words = _TYPES[key]
        if isinstance(value, bool) or not isinstance(value, types):
            raise Unfit(f"field {key!r} is {_json_type(value)}, not {words}", line)
        if key == "state" and value not in KNOWN:
            raise Unfit(f"field 'state' is {value!r:.40}, not one of {', '.join(KNOWN)}", line)
    return Entry(**doc)
