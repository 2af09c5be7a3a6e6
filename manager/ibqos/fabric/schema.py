"""The JSON Schema of a fabric document (`ibqos.fabric/1`), generated from the pydantic model:
`python -m ibqos.fabric.schema > docs/fabric.schema.json`. A test checks that the committed
file equals this output, and that the C read-back's output validates against it."""

from __future__ import annotations

import json
from typing import Any

from .codecs import GUID_PATTERN, hex_guid
from .model import SCHEMA, Fabric


def fabric_json_schema() -> dict[str, Any]:
    doc = Fabric.model_json_schema(by_alias=True, mode="validation")
    # "schema" has a default in Python (a Fabric built in code is this schema) but a document
    # must name it: Fabric.load refuses one that does not.
    doc["required"] = ["schema", *doc.get("required", [])]
    doc["properties"]["schema"] = {"const": SCHEMA, "title": "Schema", "type": "string"}
    _hex_defaults(doc)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA, **doc}


def _hex_defaults(node: Any) -> None:
    """A GUID's default in its JSON form (pydantic writes the Python int)."""
    if isinstance(node, dict):
        if node.get("pattern") == GUID_PATTERN and isinstance(node.get("default"), int):
            node["default"] = hex_guid(node["default"])
        for v in node.values():
            _hex_defaults(v)
    elif isinstance(node, list):
        for v in node:
            _hex_defaults(v)


def schema_text() -> str:
    return json.dumps(fabric_json_schema(), indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    print(schema_text(), end="")
