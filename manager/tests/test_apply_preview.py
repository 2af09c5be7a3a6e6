"""Issue 20 item 3: a preview never writes. Every `ibqos apply --dry-run` (and `ibqos rollback
--dry-run`) against every state a configuration can be in leaves the tree byte-identical
(paths, contents, modes, mtimes, symlink targets), and its diff names added, changed and
removed files and the P_Keys a removal takes off the fabric. The --service paths run in
Debian's unit set-up: test_apply_debian_unit.py. No OpenSM runs here: a dry run needs none."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from ibqos import osmconf
from ibqos.apply.version_meta import VersionMeta
from ibqos.paths import REPO_ROOT
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from ibqos.render import render_plan
from ibqos_app.apply.run import Apply, ApplyRequest
from tree_snapshot import changes, snapshot

TENANTS = "Default=0x7fff : ALL=full ;\nt1=0x8101 : ALL=full ;\nt2=0x8102 : ALL=full ;\nt3=0x8103 : ALL=full ;\n"
STATES = ("no-conf", "conf", "store-a", "store-p", "tampered")
OPTION_SETS = (
    (),
    ("--allow-pkey-removal", "--keep", "1"),
    ("--accept-edits", "--qos-policy", "{etc}/qos-policy.conf"),
    ("--pidfile", "{etc}/no-such.pid", "--lock-timeout", "0"),
    ("--init-conf",),  # needs --service: refused, and still nothing written
)


def _plan(tmp: Path, name: str, partitions: str | None) -> Path:
    doc = yaml.safe_load((REPO_ROOT / "examples" / "two-class.yaml").read_text())
    if partitions:
        (tmp / f"{name}.partitions.conf").write_text(partitions)
        doc["partitions"] = f"{name}.partitions.conf"
    (tmp / f"{name}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    make_plan(load_policy(tmp / f"{name}.yaml")).save(tmp / f"{name}.plan.json")
    return tmp / f"{name}.plan.json"


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plans")
    return {"a": _plan(tmp, "a", None), "p": _plan(tmp, "p", TENANTS)}


def _store(etc: Path, plan_path: Path) -> None:
    """Take the files over and make `plan_path`'s set current, with the store's own code (no
    sweep: a dry run reads only the files)."""
    a = Apply(ApplyRequest(plan_path, etc / "opensm.conf"))
    a.pipeline.run(a, ("render",))
    cs = a.s.confset
    cs.adopt()
    cs.flip(cs.stage(a.s.files, VersionMeta(plan=str(plan_path)), extra={"plan.json": plan_path.read_text()}))


def make_state(etc: Path, state: str, plans: dict[str, Path]) -> None:
    etc.mkdir()
    if state == "no-conf":
        return
    files = render_plan(make_plan(load_policy(plans["a"].with_suffix("").with_suffix(".yaml"))), etc.parent / "r")
    conf = osmconf.merge(
        Path(files["opensm.conf"]).read_text(),
        {
            "qos_policy_file": str(etc / "qos-policy.conf"),
            "event_plugin_options": str(etc / "ibqos-tables.conf"),
            "partition_config_file": str(etc / "partitions.conf"),  # absent until a plan has partitions
            "log_file": str(etc / "opensm.log"),
        },
        "test",
    )
    (etc / "opensm.conf").write_text(conf)
    (etc / "qos-policy.conf").write_text(Path(files["qos-policy.conf"]).read_text())
    (etc / "ibqos-tables.conf").write_text(Path(files["plugin-tables.conf"]).read_text())
    if state in ("store-a", "tampered"):
        _store(etc, plans["a"])
    if state == "store-p":
        _store(etc, plans["p"])
    if state == "tampered":
        with open(etc / "qos-policy.conf", "a") as f:  # through the symlink, as an editor would
            f.write("# edited by hand\n")


def dry(ibqos_cli, etc: Path, *args: str) -> subprocess.CompletedProcess:
    return ibqos_cli(*args, "--dry-run", timeout=120)


@pytest.mark.parametrize("state", STATES)
def test_every_dry_run_leaves_the_tree_unchanged(ibqos_cli, tmp_path, plans, state):
    etc = tmp_path / "etc"
    make_state(etc, state, plans)
    runs = [
        ["apply", str(plans[p]), "--opensm-conf", str(etc / "opensm.conf"), *(o.format(etc=etc) for o in opts)]
        for p in plans
        for opts in OPTION_SETS
    ]
    runs += [
        ["rollback", *v, "--opensm-conf", str(etc / "opensm.conf"), "--pid", "1"] for v in ((), ("v0000",), ("v0001",))
    ]
    bad = []
    for args in runs:
        before = snapshot(etc)
        r = dry(ibqos_cli, etc, *args)
        diff = changes(before, snapshot(etc))
        if diff or "Traceback" in r.stderr or r.returncode not in (0, 1, 2, 3):
            bad.append((args, r.returncode, r.stderr[-300:], diff))
    assert not bad, bad


def test_the_diff_names_added_changed_and_removed_files(ibqos_cli, tmp_path, plans):
    etc = tmp_path / "etc"
    make_state(etc, "conf", plans)
    r = dry(ibqos_cli, etc, "apply", str(plans["p"]), "--opensm-conf", str(etc / "opensm.conf"))
    assert r.returncode == 0, r.stderr
    assert f"added: {etc}/partitions.conf" in r.stdout and "+t1=0x8101" in r.stdout
    assert f"changed: {etc}/opensm.conf" in r.stdout

    etc2 = tmp_path / "etc2"
    make_state(etc2, "store-p", plans)
    r = dry(ibqos_cli, etc2, "apply", str(plans["a"]), "--opensm-conf", str(etc2 / "opensm.conf"))
    assert r.returncode == 0, r.stderr
    assert f"removed: {etc2}/partitions.conf" in r.stdout and "-t1=0x8101 : ALL=full ;" in r.stdout
    assert "P_Keys removed from every port: 0x8101, 0x8102, 0x8103 (apply refuses this" in r.stdout


def test_an_unchanged_plan_previews_as_no_change(ibqos_cli, tmp_path, plans):
    etc = tmp_path / "etc"
    make_state(etc, "store-a", plans)
    r = dry(ibqos_cli, etc, "apply", str(plans["a"]), "--opensm-conf", str(etc / "opensm.conf"))
    assert r.returncode == 0, r.stderr
    assert "no change" in r.stdout and "changed:" not in r.stdout


def test_a_tampered_store_is_named_in_the_preview(ibqos_cli, tmp_path, plans):
    etc = tmp_path / "etc"
    make_state(etc, "tampered", plans)
    r = dry(ibqos_cli, etc, "apply", str(plans["a"]), "--opensm-conf", str(etc / "opensm.conf"))
    assert r.returncode == 0, r.stderr
    assert f"TAMPERED: {etc}/ibqos.d/v0001 changed since ibqos wrote it (qos-policy.conf differ" in r.stdout
