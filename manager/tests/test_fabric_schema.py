"""docs/fabric.schema.json is the pydantic Fabric's JSON Schema: committed as generated, and
it accepts and refuses the same documents as `Fabric.load`. (The C writer's output is checked
against it on a live fabric in test_fabric_live.py.)"""

from __future__ import annotations

import json

import jsonschema
import pytest
from ibqos.arbiter import ArbTable
from ibqos.errors import InputError
from ibqos.fabric.model import Fabric, Node, Port
from ibqos.fabric.schema import schema_text
from ibqos.paths import REPO_ROOT

COMMITTED = REPO_ROOT / "docs" / "fabric.schema.json"


def test_the_committed_schema_is_the_generated_one():
    assert COMMITTED.read_text() == schema_text(), "run: python -m ibqos.fabric.schema > docs/fabric.schema.json"


def _fabric() -> Fabric:
    sw = Node(guid=0x100, kind="switch", desc="sw0", nports=2, lft=[255, 0, 1, 2])
    sw.ports[0] = Port(num=0, guid=0x100, lid=1)
    f = Fabric(source="test", nodes={sw.guid: sw}, path_sls={(2, 3): 1, (3, 2): 0})
    for i in (1, 2):
        ca = Node(guid=0x200 + i, kind="ca", desc=f"ca{i}", nports=1)
        arb = ArbTable([(0, 1)] + [(0, 0)] * 7, [(1, 4)] + [(0, 0)] * 7, 3, 8, 8)
        ca.ports[1] = Port(num=1, guid=0x200 + i, lid=1 + i, remote=(sw.guid, i), op_vls=2, vlarb=arb)
        sw.ports[i] = Port(num=i, remote=(ca.guid, 1), op_vls=2, vlarb=arb)
        ca.sl2vl[(0, 1)] = (0, 1) * 8
        f.nodes[ca.guid] = ca
    sw.sl2vl = {(1, 2): (0,) * 16, (2, 1): (1,) * 16}
    return f


BAD = [
    ("an unknown field", lambda d: d["nodes"][0].update(colour="red"), "nodes.0.colour"),
    ("a GUID as a number", lambda d: d["nodes"][1]["ports"][0].update(guid=513), "nodes.1.ports.0.guid"),
    ("an SL2VL row of 15 VLs", lambda d: d["nodes"][0]["sl2vl"][0].__setitem__(2, "0" * 15), "nodes.0.sl2vl.0.2"),
    ("a VLArb VL 15", lambda d: d["nodes"][1]["ports"][0]["vlarb"]["high"][0].__setitem__(0, 15), "vlarb"),
    ("an SL 16 for a path", lambda d: d["path_sls"][0].__setitem__(2, 16), "path_sls.0.2"),
    ("a lane speed nan", lambda d: d["nodes"][1]["ports"][0].update(speed="nan"), "nodes.1.ports.0.speed"),
    ("a width 3X", lambda d: d["nodes"][1]["ports"][0].update(width="3X"), "nodes.1.ports.0.width"),
    # redteam: the schema allowed LIDs up to 0xFFFF, the loader only unicast ones (to 0xBFFF)
    ("a multicast LID", lambda d: d["nodes"][1]["ports"][0].update(lid=0xC000), "nodes.1.ports.0.lid"),
    ("no schema", lambda d: d.pop("schema"), None),
]


def test_python_writes_what_the_schema_describes(tmp_path):
    _fabric().save(tmp_path / "fabric.json")
    doc = json.loads((tmp_path / "fabric.json").read_text())
    jsonschema.Draft202012Validator(json.loads(COMMITTED.read_text())).validate(doc)
    assert Fabric.load(tmp_path / "fabric.json") == _fabric()


@pytest.mark.parametrize("what, spoil, field", BAD, ids=[b[0] for b in BAD])
def test_schema_and_loader_refuse_the_same_documents(tmp_path, what, spoil, field):
    doc = _fabric().to_json()
    spoil(doc)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(json.loads(COMMITTED.read_text())).validate(doc)
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(InputError) as e:
        Fabric.load(tmp_path / "bad.json")
    # the file is one line of JSON: line 1 where the field is in it, no line where it is missing
    line = ":1" if field else ""
    assert str(e.value).startswith(f"{tmp_path / 'bad.json'}{line}: ")
    assert (field or "not an ibqos fabric model") in str(e.value)
