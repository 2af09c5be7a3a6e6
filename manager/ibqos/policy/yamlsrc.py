"""YAML to plain data, remembering the line of every value (for `file:line: field:` errors),
with limits that keep a hostile or broken file from hanging or exhausting ibqos.

PyYAML's composer and constructor recurse once per nesting level (a thousand brackets give a
RecursionError), follow self-referencing anchors into a cycle, and copy every alias in full
(nine levels of nine aliases is 9⁹ nodes). So the document is built here from PyYAML's event
stream, which its parser produces without recursion, by one loop that enforces:

  - at most MAX_BYTES of input, strictly UTF-8, read without blocking (no FIFO hangs);
  - collections nested at most MAX_DEPTH deep;
  - scalars of at most MAX_SCALAR characters, numbers of at most MAX_NUMBER characters, and
    no infinite or NaN numbers;
  - aliases only to anchors already complete (no recursion), expanding to at most
    ALIAS_BUDGET nodes in all;
  - no merge keys (`<<`), no tags beyond the plain YAML scalars, one document.

Every refusal is one InputError naming the file, line and the field being read.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import yaml

from ..errors import InputError
from ..inputfile import read_text_hashed

Path_ = tuple[Any, ...]  # a location inside the document: ("classes", 0, "bandwidth")

MAX_BYTES = 256 * 1024
MAX_DEPTH = 32
MAX_SCALAR = 4096
MAX_NUMBER = 40
ALIAS_BUDGET = 2000

_TAG = "tag:yaml.org,2002:"
_SCALAR_TAGS = {_TAG + t for t in ("str", "int", "float", "bool", "null")}
_TRUE = ("yes", "true", "on")  # PyYAML's booleans, as YAML 1.1 spells them (any case)


class Located:
    """Plain data plus a map from locations to 1-based line numbers."""

    def __init__(
        self, data: Any, lines: dict[Path_, int], file: str, sha256: str = "", booleans: dict[Path_, str] | None = None
    ):
        self.data, self.lines, self.file, self.sha256 = data, lines, file, sha256
        self.booleans = booleans or {}  # location -> the plain word YAML 1.1 read as true/false

    def boolean_note(self, loc: Iterable[Any], error_type: str) -> str | None:
        """Why a value that should be text (a pydantic `string_type` error) is not, when YAML
        read the word as a boolean: 'Input should be a valid string' for `name: yes` did not
        say so."""
        word = self.booleans.get(tuple(loc))
        if word is None or error_type != "string_type":
            return None
        return f"{word!r} is a YAML boolean ({str(word.lower() in _TRUE).lower()}): quote it if it is text"

    def line(self, loc: Iterable[Any]) -> int | None:
        """Line of the value at `loc`, or of its nearest enclosing value."""
        loc = tuple(loc)
        while loc:
            if loc in self.lines:
                return self.lines[loc]
            loc = loc[:-1]
        return self.lines.get((), None)


def read_text_capped(path: Path, limit: int = MAX_BYTES, what: str = "a policy") -> tuple[str, str]:
    """The file's text and the SHA-256 of its bytes (inputfile.py: a regular file of at
    most `limit` bytes, strictly UTF-8)."""
    return read_text_hashed(path, limit=limit, what=what)


def load_yaml(path: str | Path, what: str = "a policy") -> Located:
    """Any small YAML document an admin writes (a policy, traffic classes), with the limits
    above and every node's line."""
    path = Path(path)
    text, sha256 = read_text_capped(path, what=what)
    builder = _Builder(path)
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            builder.feed(event)
    except yaml.reader.ReaderError as e:
        line = text[: e.position].count("\n") + 1
        what = f"U+{e.character:04X}" if isinstance(e.character, int) else repr(e.character)
        raise InputError(
            f"YAML: character {what} is not allowed", file=path, line=line, field=_dotted(builder.where())
        ) from e
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise InputError(
            f"YAML syntax: {e.problem or e.context}",
            file=path,
            line=mark.line + 1 if mark else None,
            field=_dotted(builder.where()) or None,
        ) from e
    except yaml.YAMLError as e:
        raise InputError(f"YAML: {str(e).splitlines()[0]}", file=path) from e
    except (ValueError, OverflowError) as e:
        # PyYAML's scanner lets a few escapes through to Python (e.g. "\U7000F3087": chr()
        # out of range) without a mark; the last line the builder reached is where it stopped
        raise InputError(
            f"YAML: bad escape in a quoted scalar ({e})",
            file=path,
            line=max(builder.lines.values(), default=1),
            field=_dotted(builder.where()) or None,
        ) from e
    if not builder.done:
        raise InputError("the file is empty", file=path)
    return Located(builder.root, dict(builder.lines), str(path), sha256, builder.booleans)


@dataclass
class _Frame:
    value: dict[Any, Any] | list[Any]
    loc: Path_
    anchor: str | None
    first_line: int  # index into _Builder.order where this subtree's lines start
    key: object = None  # mapping: the key waiting for its value
    has_key: bool = False


@dataclass
class _Anchored:
    value: object
    loc: Path_
    lines: list[tuple[Path_, int]] = field(default_factory=list)


class _Builder:
    """Plain data from a YAML event stream, one event at a time, within the limits above."""

    def __init__(self, path: Path):
        self.path = path
        self.stack: list[_Frame] = []
        self.anchors: dict[str, _Anchored] = {}
        self.open_anchors: set[str] = set()
        self.lines: dict[Path_, int] = {}
        self.order: list[tuple[Path_, int]] = []  # the same, in the order values were made
        self.booleans: dict[Path_, str] = {}
        self.alias_nodes = 0
        self.root = None
        self.done = False
        self.docs = 0
        self.ctor = yaml.SafeLoader("")

    def fail(self, message: str, event: yaml.Event, loc: Path_ | None = None) -> NoReturn:
        loc = self.where() if loc is None else loc
        raise InputError(message, file=self.path, line=event.start_mark.line + 1, field=_dotted(loc) or None)

    def where(self) -> Path_:
        """The location the next value will take."""
        if not self.stack:
            return ()
        top = self.stack[-1]
        if isinstance(top.value, list):
            return top.loc + (len(top.value),)
        return top.loc + (top.key,) if top.has_key else top.loc

    def _key_position(self) -> bool:
        return bool(self.stack) and isinstance(self.stack[-1].value, dict) and not self.stack[-1].has_key

    def feed(self, ev: yaml.Event) -> None:
        if isinstance(ev, yaml.DocumentStartEvent):
            self.docs += 1
            if self.docs > 1:
                self.fail("one YAML document per file (found a second '---')", ev, ())
        elif isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            self._open(ev)
        elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            self._close()
        elif isinstance(ev, yaml.ScalarEvent):
            self._scalar(ev)
        elif isinstance(ev, yaml.AliasEvent):
            self._alias(ev)

    # ---- collections -------------------------------------------------------
    def _open(self, ev: yaml.Event) -> None:
        if self._key_position():
            self.fail("mapping keys must be plain names", ev)
        mapping = isinstance(ev, yaml.MappingStartEvent)
        tag = ev.tag
        if tag not in (None, "!", _TAG + ("map" if mapping else "seq")):
            self.fail(f"YAML tag {tag.replace(_TAG, '!!')} is not supported", ev)
        if len(self.stack) >= MAX_DEPTH:
            self.fail(f"nested more than {MAX_DEPTH} levels deep", ev)
        loc = self.where()
        self._note(loc, ev)
        if ev.anchor:
            self.open_anchors.add(ev.anchor)
        self.stack.append(_Frame({} if mapping else [], loc, ev.anchor, len(self.order) - 1))

    def _close(self) -> None:
        frame = self.stack.pop()
        if frame.anchor:
            self.open_anchors.discard(frame.anchor)
            self.anchors[frame.anchor] = _Anchored(frame.value, frame.loc, self.order[frame.first_line :])
        self._place(frame.value)

    # ---- scalars and aliases -----------------------------------------------
    def _scalar(self, ev: yaml.ScalarEvent) -> None:
        if len(ev.value) > MAX_SCALAR:
            self.fail(f"a value of {len(ev.value)} characters (at most {MAX_SCALAR})", ev)
        tag = ev.tag if ev.tag not in (None, "!") else self.ctor.resolve(yaml.ScalarNode, ev.value, ev.implicit)
        if ev.tag == "!":
            tag = _TAG + "str"
        if tag == _TAG + "merge" and self._key_position():
            self.fail("YAML merge keys (<<) are not supported", ev)
        if tag not in _SCALAR_TAGS:
            self.fail(f"YAML tag {tag.replace(_TAG, '!!')} is not supported", ev)
        if tag in (_TAG + "int", _TAG + "float") and len(ev.value) > MAX_NUMBER:
            self.fail(f"a number of {len(ev.value)} characters (at most {MAX_NUMBER})", ev)
        if tag in (_TAG + "int", _TAG + "float") and (why := _other_base(ev.value)):
            self.fail(why, ev)
        try:
            value = self.ctor.construct_object(yaml.ScalarNode(tag, ev.value, ev.start_mark, ev.end_mark, ev.style))
        except (yaml.YAMLError, ValueError, OverflowError) as e:
            self.fail(f"bad value {ev.value!r}: {str(e).splitlines()[0]}", ev)
        if isinstance(value, float) and not math.isfinite(value):
            self.fail(f"{ev.value!r} is not a finite number", ev)
        if self._key_position():
            self._key(value, ev)
            return
        loc = self.where()
        self._note(loc, ev)
        if isinstance(value, bool) and ev.tag is None:
            self.booleans[loc] = ev.value
        if ev.anchor:
            self.anchors[ev.anchor] = _Anchored(value, loc, [(loc, ev.start_mark.line + 1)])
        self._place(value)

    def _alias(self, ev: yaml.AliasEvent) -> None:
        if self._key_position():
            self.fail("mapping keys must be plain names, not aliases", ev)
        if ev.anchor in self.open_anchors:
            self.fail(f"alias *{ev.anchor} refers to a value that contains it (recursive anchor)", ev)
        target = self.anchors.get(ev.anchor)
        if target is None:
            self.fail(f"alias *{ev.anchor} has no anchor &{ev.anchor} before it", ev)
        self.alias_nodes += len(target.lines)
        if self.alias_nodes > ALIAS_BUDGET:
            self.fail(f"aliases expand to more than {ALIAS_BUDGET} values", ev)
        loc = self.where()
        cut = len(target.loc)
        for sub, _ in target.lines:
            self._record(loc + sub[cut:], ev.start_mark.line + 1)
        self._place(copy.deepcopy(target.value))

    # ---- placing values ----------------------------------------------------
    def _key(self, key: Any, ev: yaml.Event) -> None:
        top = self.stack[-1]
        try:
            dup = key in top.value
        except TypeError:
            self.fail("mapping keys must be plain names", ev)
        if dup:
            self.fail("duplicate key", ev, top.loc + (key,))
        top.key, top.has_key = key, True

    def _place(self, value: Any) -> None:
        if not self.stack:
            self.root, self.done = value, True
            return
        top = self.stack[-1]
        if isinstance(top.value, list):
            top.value.append(value)
        else:
            top.value[top.key] = value
            top.key, top.has_key = None, False

    def _note(self, loc: Path_, ev: yaml.Event) -> None:
        self._record(loc, ev.start_mark.line + 1)

    def _record(self, loc: Path_, line: int) -> None:
        self.lines[loc] = line
        self.order.append((loc, line))


def _other_base(text: str) -> str | None:
    """Why a plain number YAML 1.1 (PyYAML) reads in another base than a person wrote it is
    refused, or None: a leading 0 is octal ('bandwidth: 010' was 8 %, 'sls: [010]' SL 8,
    while 09 is 9) and a colon base 60 ('1:30' is 90); YAML 1.2 and the admin read 10 and a
    time. 00 to 07 read the same in both and are taken."""
    sign, digits = ("-" if text.startswith("-") else ""), text.lstrip("+-").replace("_", "")
    if ":" in digits:
        return f"{text!r} is a base-60 number in YAML: quote it if it is text"
    if re.fullmatch(r"0[0-7]+", digits) and int(digits, 8) != int(digits):
        return f"{text!r} is octal in YAML ({sign}{int(digits, 8)}): write {sign}{int(digits)} without the leading 0"
    return None


def _dotted(loc: Iterable[Any]) -> str:
    """("classes", 0, "bandwidth") -> "classes[0].bandwidth"; a key that is not a printable
    name is quoted, so the error stays one line and shows no raw control characters."""
    out = ""
    for part in loc:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
            continue
        name = part if isinstance(part, str) and part.isprintable() and part.strip() == part and part else repr(part)
        out += f".{name}" if out else name
    return out
