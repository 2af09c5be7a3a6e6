"""One port's arbitration configuration: high table, low table, VLHighLimit (docs/arbiter.md),
and, for a table read back from a port, the capacities the port reports.

The one VLArb value type: the planner, the plan document, the fabric model, the conformance
check, status, the simulator and the testbed all hold an `ArbTable`. Its JSON form is
`{"high": [[vl, weight], …], "low": […], "high_limit": N}` plus `high_cap`/`low_cap` where
known; pydantic models validate and serialise it through `__get_pydantic_core_schema__`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import ErrorDetails, SchemaValidator, ValidationError
from pydantic_core import core_schema as cs

MAX_WEIGHT = 255
MAX_VL = 14  # VL15 is never arbitrated
NO_LIMIT = 255
MAX_CAP = 64  # PortInfo VLArbitrationHighCap/LowCap: at most 64 entries per table


def _int(le: int) -> cs.CoreSchema:
    # strict: a document's `true`, `32.0` or `"32"` is a typo, not the weight 32 (pydantic's
    # lax mode took all three, and a model's own strict config does not reach this schema)
    return cs.int_schema(ge=0, le=le, strict=True)


def _document(entry: cs.CoreSchema) -> cs.CoreSchema:
    """A table's JSON form, its entries as `entry`."""
    return cs.typed_dict_schema(
        {
            "high": cs.typed_dict_field(cs.list_schema(entry, max_length=MAX_CAP)),
            "low": cs.typed_dict_field(cs.list_schema(entry, max_length=MAX_CAP)),
            "high_limit": cs.typed_dict_field(_int(le=NO_LIMIT)),
            "high_cap": cs.typed_dict_field(_int(le=MAX_CAP), required=False),
            "low_cap": cs.typed_dict_field(_int(le=MAX_CAP), required=False),
        },
        extra_behavior="forbid",
    )


# The one check of a table's bounds (the IBA's): documents are validated by it through
# pydantic (errors naming the field and line), tables built in Python by the constructor.
_BOUNDED = _document(cs.tuple_schema([_int(le=MAX_VL), _int(le=MAX_WEIGHT)]))
_CHECK = SchemaValidator(_BOUNDED)
_ENTRY_FIELD = ("VL", "weight")


def _where(err: ErrorDetails) -> str:
    """`high[3]: VL 15`, `limit 256`: the constructor's argument, and the value when it is one number."""
    side, *rest = err["loc"]
    where = "limit" if side == "high_limit" else f"{side}[{rest[0]}]" if rest else str(side)
    if len(rest) == 2:
        return f"{where}: {_ENTRY_FIELD[int(rest[1])]} {err['input']!r}"
    return f"{where} {err['input']!r}" if isinstance(err["input"], int) else where


@dataclass(frozen=True)
class ArbTable:
    """`high`/`low` are (vl, weight) entries in table order; weights count 64-byte units.
    `limit` is VLHighLimit in 4096-byte units (255 = no limit, 0 = one packet).
    `high_cap`/`low_cap` are the entries the port holds (read back: the tables are that long,
    weight-0 entries included); 0 where no port was asked (a planned table)."""

    high: tuple[tuple[int, int], ...]
    low: tuple[tuple[int, int], ...] = ()
    limit: int = 1
    high_cap: int = 0
    low_cap: int = 0

    def __init__(
        self,
        high: Iterable[Iterable[int]] = (),
        low: Iterable[Iterable[int]] = (),
        limit: int = 1,
        high_cap: int = 0,
        low_cap: int = 0,
    ):
        doc = {"high": list(high), "low": list(low), "high_limit": limit, "high_cap": high_cap, "low_cap": low_cap}
        try:
            # lax: Python's own numbers (numpy's among them) are not a document's typos
            self._fill(_CHECK.validate_python(doc, strict=False))
        except ValidationError as e:
            err = e.errors()[0]
            raise ValueError(f"{_where(err)}: {err['msg']}") from None

    def _fill(self, d: Any) -> None:
        """Fields from a document the schema has checked."""
        object.__setattr__(self, "high", tuple(d["high"]))
        object.__setattr__(self, "low", tuple(d["low"]))
        object.__setattr__(self, "limit", d["high_limit"])
        object.__setattr__(self, "high_cap", d.get("high_cap", 0))
        object.__setattr__(self, "low_cap", d.get("low_cap", 0))

    @classmethod
    def _checked(cls, d: Any) -> ArbTable:
        t = cls.__new__(cls)
        t._fill(d)
        return t

    @property
    def vls(self) -> list[int]:
        """VLs that own at least one entry of non-zero weight."""
        return sorted({vl for vl, w in self.high + self.low if w > 0})

    def tables(self) -> ArbTable:
        """The same tables without the port's capacities (what a plan compares)."""
        return ArbTable._checked({"high": self.high, "low": self.low, "high_limit": self.limit})

    # ---- JSON --------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "high": [list(e) for e in self.high],
            "low": [list(e) for e in self.low],
            "high_limit": self.limit,
        }
        if self.high_cap or self.low_cap:
            d["high_cap"], d["low_cap"] = self.high_cap, self.low_cap
        return d

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> cs.CoreSchema:
        """Validated from (and dumped to) the JSON form above; an ArbTable passes as itself."""

        written = _document(cs.list_schema(cs.int_schema(), min_length=2, max_length=2))  # what to_dict gives
        from_doc = cs.no_info_after_validator_function(cls._checked, _BOUNDED)
        return cs.json_or_python_schema(
            json_schema=from_doc,
            python_schema=cs.no_info_wrap_validator_function(
                lambda v, validate: v if isinstance(v, cls) else validate(v), from_doc
            ),
            serialization=cs.plain_serializer_function_ser_schema(lambda t: t.to_dict(), return_schema=written),
        )

    # ---- documents that write a table beside its address ---------------------------------
    @staticmethod
    def nest(doc: Any, address: tuple[str, ...]) -> Any:
        """`{"guid": …, "port": …, "high": …, …}` as `{"guid": …, "port": …, "table": {…}}`:
        a document's flat per-port entry, for a model whose `table` field is an ArbTable."""
        if isinstance(doc, dict) and "table" not in doc:
            doc = dict(doc)
            doc["table"] = {k: doc.pop(k) for k in list(doc) if k not in address}
        return doc

    @staticmethod
    def flatten(dumped: dict[str, Any]) -> dict[str, Any]:
        """The inverse of `nest`, on a model's dump."""
        rest = {k: v for k, v in dumped.items() if k != "table"}
        return {**rest, **dumped["table"]}

    # ---- text ----------------------------------------------------------------------------
    @staticmethod
    def parse_entries(text: str, side: str = "table") -> list[tuple[int, int]]:
        """`0:9,1:10,2:7` (VL:weight in table order); `-` or empty is an empty table."""
        text = text.strip()
        if text in ("", "-"):
            return []
        out = []
        for tok in text.split(","):
            # ASCII digits: str.isdigit also takes U+0661 (read as 1) and '²' (which int() refuses,
            # said in Python's words without the option)
            m = re.fullmatch(r"\s*([0-9]+)\s*:\s*([0-9]+)\s*", tok)
            if not m:
                raise ValueError(f"{side}: {tok.strip()!r} is not VL:weight")
            out.append((int(m.group(1)), int(m.group(2))))
        return out

    @staticmethod
    def format_entries(entries: Iterable[tuple[int, int]]) -> str:
        return ",".join(f"{vl}:{w}" for vl, w in entries) or "-"

    @staticmethod
    def format_served(entries: Iterable[tuple[int, int]]) -> str:
        """Only the entries the arbiter visits (weight 0 is skipped), e.g. of a read-back table."""
        return ArbTable.format_entries([e for e in entries if e[1]])
