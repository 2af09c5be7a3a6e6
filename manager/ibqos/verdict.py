"""The verifier's credit-loop verdict on the tables last read back, kept for `ibqos monitor`.

`ibqos status --live --verdict FILE` writes it after its checks; `ibqos monitor --verdict FILE`
exports it (docs/monitor.md, "Credit loops"). The monitor never judges the routing itself: the
verdict is the verifier's, on the forwarding and SL2VL tables read back at `read_at`, and says
nothing of tables the SM programmed after that.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import pydantic

from .docfile import DOCUMENT, SMALL_DOC_LIMIT, JsonDoc, read_json_text, validate, write_atomic

SCHEMA = "ibqos.verdict/1"  # the one spelling: the model's Literal below


class Verdict(pydantic.BaseModel):
    # strict (docfile.DOCUMENT): a hand-edited `"credit_loop": "yes"` or a `read_at` of -5 is
    # not a verdict the monitor may export (a quoted bool or number is refused, not coerced)
    model_config = pydantic.ConfigDict(**DOCUMENT, frozen=True, populate_by_name=True)

    schema_: Literal["ibqos.verdict/1"] = pydantic.Field("ibqos.verdict/1", alias="schema")
    read_at: float = pydantic.Field(gt=0, allow_inf_nan=False)  # when the tables were read back (s since the epoch)
    source: str  # the fabric read, as the read-back names it ("live:ibqos-readback", a run's dumps)
    engine: str | None  # the engine in force then, as `ibqos status` names it
    # True: a credit loop; False: none; None: not checked (an engine that layers by SL, no path SLs)
    credit_loop: bool | None

    def save(self, path: str | Path) -> None:
        write_atomic(path, json.dumps(self.model_dump(by_alias=True), indent=1) + "\n")


def load_verdict(path: str | Path) -> Verdict:
    doc, text = read_json_text(
        path,
        hint=f"a {SCHEMA} file, as `ibqos status --live --verdict` writes",
        limit=SMALL_DOC_LIMIT,
        what="a verdict",
    )
    v = validate(Verdict, doc, path, text=text)
    if "schema_" not in v.model_fields_set:  # implied in Python, required in a file
        raise JsonDoc(path, text).error(f"missing: a verdict file says schema {SCHEMA!r}", "schema")
    return v
