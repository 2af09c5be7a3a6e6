"""Option values the sweep commands share (paper, compare-engines): comma-separated lists."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ibqos.errors import InputError

T = TypeVar("T")


def csv_list(text: str, what: str, parse: Callable[[str], T]) -> tuple[T, ...]:
    try:
        return tuple(parse(x.strip()) for x in text.split(",") if x.strip())
    except ValueError as exc:
        raise InputError(f"{text!r} is not a comma-separated list", field=what) from exc


def loads(text: str, what: str = "--loads") -> tuple[float, ...]:
    vals = csv_list(text, what, float)
    if not vals or any(not 0 < v <= 1 for v in vals):
        raise InputError("loads are fractions of the link in (0, 1]", field=what)
    return vals
