"""A plan's classes[].sls and its sl2class say the same thing, as the planner writes them
(planner/sls.py): a class's SLs are those it lists, exactly one class is the default, and
only the default takes the SLs no class lists. A hand-edited or foreign plan that says
otherwise is refused by the one plan check (ibqos.plan.load_plan) in every command that reads
a plan: one line naming the file, the line and the field, exit 2, nothing written.

Before that check, the first three edits below passed render, apply, dryrun, verify, simulate
and monitor (a second default, an SL given to a class that does not list it), or crashed render
with an internal error (no default class, exit 70). The fourth, an `ipoib` partition whose
broadcast SL is not the SL of the class that takes IPoIB there, was refused by `plan` only
(policy.ipoib, the one check, now also run by plan.check)."""

from __future__ import annotations

import copy
import json

import pytest
from ibqos.paths import REPO_ROOT
from ibqos.plan import load_plan
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from ibqos_app.cli._main import main


@pytest.fixture(scope="module")
def plan_doc() -> dict:
    return make_plan(load_policy(REPO_ROOT / "examples" / "four-class.yaml")).to_json()


def _non_default(doc: dict) -> dict:
    return next(c for c in doc["classes"] if not c["default"])


def _sl_to_unlisting_class(doc: dict) -> None:
    c = _non_default(doc)
    sl = next(sl for sl in range(16) if sl not in c["sls"])
    doc["sl2class"][sl] = c["index"]


def _no_default(doc: dict) -> None:
    for c in doc["classes"]:
        c["default"] = False


def _two_defaults(doc: dict) -> None:
    _non_default(doc)["default"] = True


def _ipoib_off_its_broadcast_sl(doc: dict) -> None:
    """A class that takes IPoIB on the Default partition, whose ipoib flag has no sl=: its
    broadcast group would be on SL 0, the default class's (plan refuses that policy)."""
    _non_default(doc)["match"]["ulps"] = [{"ulp": "ipoib"}]
    doc["partitions"] = {"file": "p.conf", "text": "Default=0x7fff, ipoib : ALL=full ;\n"}


EDITS = [
    (_sl_to_unlisting_class, "sl2class.", "whose sls"),
    (_no_default, "classes: ", "no class is the default"),
    (_two_defaults, ".default: ", "is a second default"),
    (_ipoib_off_its_broadcast_sl, "partitions.text: ", "broadcast group on SL 0 (no sl= flag)"),
]


def _commands(tmp_path, f):
    (tmp_path / "opensm.conf").write_text("")
    (tmp_path / "rundir").mkdir()
    return {
        "render": ["render", f, "-o", tmp_path / "out"],
        "apply": ["apply", f, "--opensm-conf", tmp_path / "opensm.conf", "--pid", "1", "--dry-run"],
        "dryrun": ["dryrun", f, "--topology", "df42", "--out", tmp_path / "run"],
        "verify": ["verify", tmp_path / "rundir", "--plan", f],
        "simulate": ["simulate", tmp_path / "rundir", "--plan", f],
        "monitor": ["monitor", "--plan", f, "--once"],
        "status": ["status", tmp_path / "rundir", "--plan", f],
        "analyze": ["analyze", f],
    }


@pytest.mark.parametrize("edit, field, says", EDITS, ids=[e[0].__name__.strip("_") for e in EDITS])
def test_contradicting_sls_are_refused_by_every_plan_reader(capsys, tmp_path, plan_doc, edit, field, says):
    doc = copy.deepcopy(plan_doc)
    edit(doc)
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(doc, indent=1))
    commands = _commands(tmp_path, f)
    before = sorted(tmp_path.rglob("*"))
    for name, args in commands.items():
        with pytest.raises(SystemExit) as e:
            main([str(a) for a in args])
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        assert e.value.code == 2 and len(lines) == 1, (name, err)
        where = lines[0].removeprefix(f"ibqos: error: {f}:")
        assert where != lines[0] and where.split(":")[0].isdigit(), (name, lines[0])  # file, then line
        assert field in where and says in where, (name, lines[0])
    assert sorted(tmp_path.rglob("*")) == before, "nothing written"


def test_the_planners_own_plans_pass(plan_doc, tmp_path):
    """The planner lists every SL it gives a non-default class; unlisted SLs go to the default."""
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(plan_doc))
    plan = load_plan(f)
    default = next(c for c in plan.classes if c.default)
    unlisted = [sl for sl in range(16) if all(sl not in c.sls for c in plan.classes)]
    assert unlisted and all(plan.sl2class[sl] == default.index for sl in unlisted)
