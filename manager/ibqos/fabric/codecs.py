"""How the fabric model's Python shapes map to its JSON document (`ibqos.fabric/1`, the
format manager/readback/src/model_json.c writes). Each is an `Annotated` marker whose core
schema validates the JSON form, accepts the Python form as is, and dumps back to JSON, so the
model's JSON Schema (docs/fabric.schema.json) describes exactly the document.

| Python | JSON |
|---|---|
| GUID `int` | `"0x0002c90300001234"` |
| `dict[key, Model]` | list of Model, sorted by key |
| `{(in, out): (vl × 16)}` | `[[in, out, "0123…f"], …]` (one hex digit per SL) |
| `{(slid, dlid): sl}` | `[[slid, dlid, sl], …]` |
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_args

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema as cs

from .check import MAX_PORTS, MAX_UCAST_LID

GUID_PATTERN = r"^0x[0-9a-fA-F]{1,16}$"


def _codec(
    json_side: cs.CoreSchema,
    from_json: Callable[[Any], Any],
    python_side: cs.CoreSchema,
    to_json: Callable[[Any], Any],
) -> cs.CoreSchema:
    return cs.json_or_python_schema(
        json_schema=cs.no_info_after_validator_function(from_json, json_side),
        python_schema=python_side,
        serialization=cs.plain_serializer_function_ser_schema(to_json, return_schema=json_side, when_used="json"),
    )


def hex_guid(g: int) -> str:
    return f"0x{g:016x}"


class HexGuid:
    """A GUID: an int in Python, a 0x-prefixed hex string in JSON."""

    @staticmethod
    def __get_pydantic_core_schema__(source: Any, handler: GetCoreSchemaHandler) -> cs.CoreSchema:
        return _codec(
            cs.str_schema(pattern=GUID_PATTERN),
            lambda s: int(s, 16),
            cs.int_schema(ge=0, lt=1 << 64),
            hex_guid,
        )


class KeyedList:
    """`dict[K, M]` in Python keyed by M's `key` attribute; a list of M in JSON, by key."""

    def __init__(self, key: str):
        self.key = key

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> cs.CoreSchema:
        key = self.key
        items = cs.list_schema(handler.generate_schema(get_args(source)[1]))

        def to_dict(lst: list[Any]) -> dict[Any, Any]:
            out = {getattr(m, key): m for m in lst}
            if len(out) != len(lst):
                raise ValueError(f"two entries with the same {key}")
            return out

        return _codec(items, to_dict, handler(source), lambda d: [d[k] for k in sorted(d)])


_ROWS: dict[str, tuple[int, ...]] = {}  # one tuple per distinct SL2VL row: a fabric has few


def _row(s: str) -> tuple[int, ...]:
    row = _ROWS.get(s)
    if row is None:
        row = _ROWS[s] = tuple(int(c, 16) for c in s)
    return row


class Sl2vlRows:
    """`{(in, out): 16 VLs}` in Python; `[[in, out, "hex16"], …]` in JSON."""

    @staticmethod
    def __get_pydantic_core_schema__(source: Any, handler: GetCoreSchemaHandler) -> cs.CoreSchema:
        port = cs.int_schema(ge=0, le=MAX_PORTS)
        row = cs.tuple_schema([port, port, cs.str_schema(pattern=r"^[0-9a-fA-F]{16}$")])
        return _codec(
            cs.list_schema(row),
            lambda rows: {(i, o): _row(s) for i, o, s in rows},
            handler(source),
            lambda d: [(i, o, "".join(f"{v:x}" for v in vls)) for (i, o), vls in sorted(d.items())],
        )


class PathSlRows:
    """`{(slid, dlid): sl}` in Python; `[[slid, dlid, sl], …]` in JSON."""

    @staticmethod
    def __get_pydantic_core_schema__(source: Any, handler: GetCoreSchemaHandler) -> cs.CoreSchema:
        lid = cs.int_schema(ge=1, le=MAX_UCAST_LID)
        row = cs.tuple_schema([lid, lid, cs.int_schema(ge=0, le=15)])
        return _codec(
            cs.list_schema(row),
            lambda rows: {(s, d): sl for s, d, sl in rows},
            handler(source),
            lambda d: [(s, dl, sl) for (s, dl), sl in sorted(d.items())],
        )
