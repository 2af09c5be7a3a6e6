"""A finding: one thing wrong with the fabric, as `ibqos status` and `ibqos verify` report it.

`kind` is stable for machines (monitoring keys on it), `message` is the one line for people,
`data` carries the figures behind it (counts, ports, engines) for `--json`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Finding:
    kind: str  # e.g. routing-loop, unreachable, credit-loop, qos-not-in-force, tables, link-down
    message: str
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, **self.data}
