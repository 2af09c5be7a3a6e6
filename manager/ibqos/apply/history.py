"""What happened to one configuration, version by version: `ibqos.d/history.jsonl`.

Each apply or rollback that ends (verified, rolled back, discarded by a recovery) appends one
JSON line, written by the journal as it records the end state (journal.py), so the history is
the journal's past and has one writer. A version's own meta.json says when it was written,
by whom and from which plan (sha256 of plan.json); `rows()` joins the two for
`ibqos history` and `ibqos rollback`'s default target.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ExternalError
from ..inputfile import MiB, read_text
from . import state_schema
from .confset import state_file_mode
from .journal_entry import unfit

if TYPE_CHECKING:
    from .confset import ConfigSet

LOG = "history.jsonl"
LIMIT = 64 * MiB  # a line per apply: decades of them; a device or a huge file is refused


def append(state_dir: Path, event: dict[str, Any]) -> None:
    """One line, appended and fsynced: a crash leaves whole lines before it. A line cut by an
    earlier crash (or a full disk) is ended first, so it stays the one bad line, never glued
    to the next event (which would make the file unreadable once more lines follow it)."""
    line = json.dumps(event, sort_keys=True) + "\n"
    fd = os.open(state_dir / LOG, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        os.fchmod(fd, state_file_mode(state_dir))  # not the umask's: a monitoring user reads it
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = "\n" + line
        os.write(fd, line.encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def events(state_dir: Path) -> list[dict[str, Any]]:
    """The history's events, each a journal entry as ibqos writes it. A line edited by hand
    into JSON that is no entry ([1, 2], a state that is no string) ended `ibqos history` in an
    internal error (exit 70), and bytes that are not UTF-8 in 'input is not UTF-8' naming no
    file: now one line naming the file, the line and what is wrong."""
    path = state_dir / LOG
    if not path.exists():
        return []
    text = read_text(path, limit=LIMIT, what="an apply history")
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        try:
            ev = json.loads(line)
        except ValueError:
            # an event is one flat JSON object: a line cut by a crash lacks its closing brace
            # (and append() ended it); anything else is damage from outside ibqos
            if line.rstrip().endswith("}"):
                raise ExternalError(f"{state_dir / LOG}:{n}: not a JSON line; inspect it") from None
            continue
        state_schema.check(ev, state_dir / LOG, n)
        if why := unfit(ev, line):
            raise ExternalError(f"{path}:{n}: not an entry as ibqos writes it ({why}); inspect it")
        out.append(ev)
    return out


def rows(cs: ConfigSet) -> list[dict[str, Any]]:
    """Every stored version, oldest first: time, plan hash, who, result, and what else is
    known (current, the admin's original, a rollback's source, files changed by hand)."""
    last: dict[str, dict[str, Any]] = {}
    for ev in events(cs.state):
        last[ev.get("version", "")] = ev
    current = cs.current_version()
    out = []
    for v in cs.versions():
        meta = cs.meta(v)
        latest = last.get(v)
        original = meta.adopted_from is not None
        if original:
            result = "original"
        elif latest:
            result = latest["state"].replace("-", " ")
        else:
            result = "current" if v == current else "not applied"
        out.append(
            {
                "version": v,
                "time": meta.time,
                "plan_sha256": meta.plan_sha256,
                "who": meta.who,
                "result": result,
                "action": (latest or {}).get("action", "adopt" if original else None),
                "rollback_of": meta.rollback_of,
                "current": v == current,
                "original": original,
                "tampered": cs.check(v),
            }
        )
    return out


def previous_verified(cs: ConfigSet) -> str | None:
    """`ibqos rollback`'s default: the newest version, other than the current one, whose
    last apply (or rollback) was verified and which is still stored."""
    current, stored = cs.current_version(), set(cs.versions())
    for ev in reversed(events(cs.state)):
        v = ev.get("version")
        if ev.get("state") == "verified" and isinstance(v, str) and v != current and v in stored:
            return v
    return None
