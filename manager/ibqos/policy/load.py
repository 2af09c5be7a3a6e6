"""Policy file -> validated Policy, or one `file:line: field: message` error."""

from __future__ import annotations

from pathlib import Path

import pydantic
from pydantic_core import ErrorDetails

from ..docfile import error_loc, error_message, got_note
from ..errors import InputError, one_line
from .check import check_policy
from .model import Match, Policy
from .partitions import Partitions, missing_pkeys, read_partitions
from .yamlsrc import _dotted, load_yaml


def load_policy(path: str | Path) -> Policy:
    src = load_yaml(path)
    if not isinstance(src.data, dict):
        raise InputError("a policy is a mapping with `fabric` and `classes`", file=path, line=1)
    try:
        policy = Policy.model_validate(src.data)
    except pydantic.ValidationError as e:
        err = e.errors()[0]
        loc = error_loc(err)
        raise InputError(
            src.boolean_note(loc, err["type"]) or _message(err),
            file=path,
            line=src.line(loc),
            field=_dotted(loc) or None,
        ) from e
    policy._source = str(path)
    policy._lines = dict(src.lines)
    policy._sha256 = src.sha256
    check_policy(policy)
    if policy.partitions is not None:
        policy._partitions = _read_partitions(policy, Path(path).parent)
        _check_pkeys(policy)
    return policy


def _read_partitions(policy: Policy, base: Path) -> Partitions:
    """The policy's `partitions:` file; a file that cannot be read is named with the policy's
    line (an error inside it names its own line)."""
    file, line = policy.where("partitions")
    name = policy.partitions or ""
    if not name.strip():
        raise InputError("an empty path names no partitions file", file=file, line=line, field="partitions")
    target = base / name
    try:
        return read_partitions(target)
    except InputError as e:
        if e.line is not None:
            raise
        raise InputError(f"{one_line(str(target))}: {e.detail}", file=file, line=line, field="partitions") from e


def _check_pkeys(policy: Policy) -> None:
    """Every P_Key a match rule names has its partition: OpenSM would log ERR AC14 and the
    rule would never match."""
    parts = policy.partitions_file
    if parts is None:
        return
    found = undefined_pkey(parts, [c.match for c in policy.classes])
    if found:
        loc, message = found
        file, line = policy.where(*loc)
        raise InputError(message, file=file, line=line, field=_dotted(loc))


def undefined_pkey(parts: Partitions, matches: list[Match]) -> tuple[tuple[str | int, ...], str] | None:
    """(location from `classes`, message) of the first P_Key a class's match names that the
    partitions do not define: OpenSM would log ERR AC14 and the rule would never match."""
    for i, match in enumerate(matches):
        for loc, text in match_pkeys(match):
            missing = missing_pkeys(parts, text)
            if missing:
                return ("classes", i, "match", *loc), (
                    f"P_Key {missing[0]:#06x} has no partition in {parts.file}"
                    + (f" ({len(missing)} of {text} are missing)" if len(missing) > 1 else "")
                    + ": define it there or drop it from the match"
                )
    return None


def _message(err: ErrorDetails) -> str:
    msg = error_message(err)
    if err["type"] == "extra_forbidden":
        return "unknown field"
    if err["type"] == "missing":
        return "required field is missing"
    if err["type"] in ("float_parsing", "literal_error") and "rest" in msg:
        return "must be a percentage in (0, 100] or 'rest'"
    inp = err.get("input")
    if err["type"] == "literal_error" and not isinstance(inp, (dict, list)):
        return f"{msg} (got {inp!r})"
    return msg + got_note(err)


def match_pkeys(match: Match) -> list[tuple[tuple[str | int, ...], str]]:
    """(location under the class's `match`, P_Key text) of every P_Key a match rule names."""
    out: list[tuple[tuple[str | int, ...], str]] = [(("pkey", i), str(p)) for i, p in enumerate(match.pkey)]
    for i, u in enumerate(match.ulps):
        if u.pkey is not None:
            out.append((("ulps", i, "pkey"), str(u.pkey)))
    return out
