"""`ibqos apply --service opensm@GUID` against OpenSM started exactly as Debian 12's
opensm@.service starts it (ExecStart read from the real unit file): no -F, no pidfile, the log
in /var/log/opensm.GUID.log, no /etc/opensm/opensm.conf at first. systemd is not PID 1 here,
so the scenario (debian_unit_scenario.py) runs in its own mount namespace with /etc/opensm
and /var/log bound to scratch directories, and restarts OpenSM the way systemd would."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ibqos import paths
from ibqos.paths import REPO_ROOT
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from ibqos_sim.harness import Harness
from ibqos_sim.harness.topology import dragonfly

pytestmark = pytest.mark.fabric
HERE = Path(__file__).resolve().parent
UNIT = Path("/lib/systemd/system/opensm@.service")


def _plan(tmp: Path, name: str, pkey: str | None = None) -> Path:
    doc = yaml.safe_load((REPO_ROOT / "examples" / "two-class.yaml").read_text())
    if pkey:
        doc["classes"][0]["match"] = {"pkey": [pkey]}  # no partition defines it: ERR AC14
    (tmp / f"{name}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    make_plan(load_policy(tmp / f"{name}.yaml")).save(tmp / f"{name}.plan.json")
    return tmp / f"{name}.plan.json"


@pytest.fixture(scope="module")
def scenario(once_per_run):
    """The scenario's document, run once per run (once_per_run): the tests only read it."""
    if not UNIT.is_file():
        pytest.skip(f"{UNIT} is not installed (Debian package opensm)")
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-m", "true"]).returncode:
        pytest.skip("no private mount namespace (unshare -m) here")
    return json.loads((once_per_run("debian-unit", _run_scenario) / "scenario.json").read_text())


def _run_scenario(tmp: Path) -> None:
    plan_a, plan_bad = _plan(tmp, "a"), _plan(tmp, "bad", pkey="0x0a01")
    topo = dragonfly(3, 1, 1)
    net = topo.write_net(tmp / "fabric.net")
    with Harness(net, run_dir=tmp / "ibsim") as h:
        # the unit's instance is the local port's GUID, as Debian's opensm.service lists them
        guid = h.diag(["ibstat", "-p"]).stdout.split()[0]
        cp = subprocess.run(
            [
                "unshare",
                "-m",
                "--propagation",
                "private",
                sys.executable,
                str(HERE / "debian_unit_scenario.py"),
                str(tmp / "scratch"),
                guid,
                h.sock,
                str(paths.umad2sim_lib()),
                str(paths.plugin_dir()),
                str(plan_a),
                str(plan_bad),
            ],
            capture_output=True,
            text=True,
            timeout=1200,
        )
    assert cp.returncode == 0, cp.stderr[-3000:]
    doc = json.loads(cp.stdout.strip().splitlines()[-1])
    doc["guid"] = guid
    (tmp / "scenario.json").write_text(json.dumps(doc))


def test_the_unit_command_line_is_debians(scenario):
    g = scenario["guid"]
    assert scenario["argv"] == ["/usr/sbin/opensm", "--guid", g, "--log_file", f"/var/log/opensm.{g}.log"]


def test_without_a_conf_apply_says_how_to_create_it(scenario):
    s = scenario["steps"]["apply_without_conf"]
    assert s["rc"] == 3 and "/etc/opensm/opensm.conf does not exist" in s["stderr"]
    assert "--init-conf" in s["stderr"] and "Traceback" not in s["stderr"]


def test_init_conf_writes_a_whole_conf_never_a_fragment(scenario):
    s = scenario["steps"]["init_conf"]
    assert s["rc"] == 0, s["stderr"]
    conf = scenario["conf_after_init"]
    keys = {ln.split()[0] for ln in conf.splitlines() if ln.strip() and not ln.startswith("#")}
    assert len(keys) > 100  # OpenSM's own full set of options
    assert "routing_engine dla,dfsssp,lash,nue" in conf and "event_plugin_name ibqos" in conf
    assert "event_plugin_options /etc/opensm/ibqos-tables.conf" in conf
    assert "qos_policy_file /etc/opensm/qos-policy.conf" in conf
    assert f"systemctl restart opensm@{scenario['guid']}.service" in s["stdout"]


def test_after_the_restart_apply_succeeds_end_to_end(scenario):
    assert scenario["pid_2"] != scenario["pid_1"]
    assert "dla tables configured" in scenario["log_after_restart"]
    s = scenario["steps"]["apply"]
    assert s["rc"] == 0, s["stdout"][-1500:] + s["stderr"][-1500:]
    assert "read back: every port equals the plan" in s["stdout"]
    # --init-conf wrote this plan's files, but they are not yet a version with a plan: the first
    # apply takes them over as one (status and history need it), sweeps and verifies
    assert "configuration v0000 → v0002" in s["stdout"] and "no change" not in s["stdout"]
    assert scenario["conf_is_symlink"]  # adopted into ibqos.d/ beside it
    assert not scenario["default_log_exists"]  # it watched the unit's log, not this one


def test_an_older_plugin_is_refused_naming_the_unit_given(scenario):
    """The plugin of another release loaded (planted record): apply of the deployed plan (it said
    'no change') and status name `systemctl restart` of the --service unit, not a bare
    `opensm.service`, which is none of Debian's per-port units."""
    from ibqos import __version__

    line = (
        f"the running OpenSM (pid {scenario['pid_2']}) has ibqos plugin 0.0.9 loaded, this ibqos is {__version__}: "
        f"restart it to load the installed plugin: 'systemctl restart opensm@{scenario['guid']}.service'"
    )
    s = scenario["steps"]["apply_same_old_plugin"]
    assert (s["rc"], s["stderr"].splitlines()) == (3, [f"ibqos: error: {line}"]), s["stdout"] + s["stderr"]
    st = scenario["steps"]["status_old_plugin"]
    found = [f["message"] for f in json.loads(st["stdout"])["findings"] if f["kind"] == "plugin-version"]
    assert (st["rc"], found) == (1, [line]), st["stderr"]


def test_an_opensm_error_in_the_sweep_rolls_back(scenario):
    s = scenario["steps"]["apply_bad"]
    assert s["rc"] == 1 and "ERR AC14" in s["stderr"] and "rolled back" in s["stderr"], s["stderr"]
    st = scenario["steps"]["status"]
    assert st["rc"] == 0, st["stdout"][-1500:] + st["stderr"][-1500:]
    assert "equals" in st["stdout"]  # back on plan A, proven live


def test_no_dry_run_writes_to_etc_opensm(scenario):
    """Issue 20 item 3: --init-conf --dry-run wrote /etc/opensm/opensm.conf and its files."""
    names = scenario["dry_runs"]
    assert len(names) == 9
    for name in names:
        s = scenario["steps"][name]
        assert s["changed"] == [], (name, s["changed"])
        assert "Traceback" not in s["stderr"], (name, s["stderr"])
    init = scenario["steps"]["dry_init_conf"]
    assert init["rc"] == 0, init["stderr"]
    assert "added: /etc/opensm/opensm.conf" in init["stdout"] and "added: /etc/opensm/qos-policy.conf" in init["stdout"]
    assert "dry run: nothing written" in init["stdout"]
    same = scenario["steps"]["dry_store_same_plan"]["stdout"].strip()
    assert same.endswith("no change: the files already hold this plan"), same
    assert scenario["steps"]["dry_init_conf_exists"]["rc"] == 2


def test_history_through_the_unit(scenario):
    s = scenario["steps"]["history"]
    assert s["rc"] == 0, s["stderr"]
    rows = json.loads(s["stdout"])
    assert [(r["version"], r["result"]) for r in rows] == [
        ("v0000", "original"),
        ("v0001", "rolled back"),  # the bad plan over v0000 (its qos-policy.conf absent)
        ("v0002", "verified"),  # the --init-conf files, taken over with their plan
        ("v0003", "rolled back"),
    ]


def test_a_missing_qos_policy_file_is_missing_again_after_rollback_to_v0000(scenario):
    """The conf names /etc/opensm/qos-policy.conf and there is none (Debian as shipped): v0000
    records it absent, and rolling back to v0000 removes the file apply linked there, so
    OpenSM runs without it as before; an empty one it refuses (ERR AC10/AC04)."""
    assert scenario["qos_after_apply"]  # the plan's file was there in between
    s = scenario["steps"]["rollback_v0000"]
    assert s["rc"] == 0, s["stdout"][-1500:] + s["stderr"][-1500:]
    assert scenario["after_rollback_v0000"] == {"qos": False, "err_ac": []}


def test_a_failed_first_apply_leaves_the_missing_file_missing(scenario):
    """Its restore goes back to v0000: no empty file for OpenSM to refuse at every heavy sweep."""
    s = scenario["steps"]["apply_bad_first"]
    assert s["rc"] == 1 and "rolled back to v0000" in s["stderr"], s["stderr"]
    assert scenario["after_failed_first_apply"] == {"qos": False, "err_ac": []}
