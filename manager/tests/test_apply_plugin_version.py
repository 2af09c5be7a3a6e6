"""The plugin a running OpenSM loaded is the installed ibqos's release (docs/sm-hosts.md, "After
an upgrade"). OpenSM keeps the libibqos.so it loaded at its start, so after a package upgrade
the old one routes until OpenSM restarts; before, nothing said so, and `apply` rendered and
verified the new release's files through the old plugin. The record now names the plugin's
release; `apply` refuses any other before it writes anything (exit 3, one line), `status`
reports it as finding `plugin-version`.

The records of an older plugin are built as it wrote them: 7cee6fd's put_record (the last
before `plugin_version`) wrote exactly the keys in OLD_KEYS, the rest as now."""

from __future__ import annotations

import json
import os
import re
import shlex
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from apply_helpers import (
    installed_plugin_copy,
    live_sm,  # noqa: F401 (fixture)
    make_plan_file,
    managed_texts,
    programmed_equals,
    run_apply,
    run_status,
    sm_on_plan_a,
    state_tree,
    upgrade_plugin_copy,
)
from ibqos.fabric.dla_record import RECORD_FILE
from ibqos.paths import REPO_ROOT

pytestmark = pytest.mark.fabric

# `git show 7cee6fd:plugin/src/record.c`, put_record: every key it could write
OLD_KEYS = {
    "schema",
    "osm_pid",
    "heavy_sweeps",
    "subnet_up",
    "state",
    "sweep",
    "engine",
    "table_file",
    "groups",
    "vls_per_class",
    "levels",
    "turns_shifted",
    "routes",
    "ports_complete",
    "ports",
}


def _release() -> str:
    """The release CMake builds the plugin as, read from project() (not from ibqos)."""
    m = re.search(r"^project\(ibqos VERSION (\S+)", (REPO_ROOT / "CMakeLists.txt").read_text(), re.M)
    assert m, "no project(ibqos VERSION …) in CMakeLists.txt"
    return m.group(1)


def _refusal(pid: int, loaded: str, unit: str | None = None) -> str:
    """The line, naming how to restart this OpenSM: its unit, else its own command line (read
    from the process): a bare `systemctl restart opensm` restarts every port's OpenSM (Debian's
    opensm@.service is PartOf=opensm.service), each subnet's master at once."""
    if unit:
        restart = f"'systemctl restart {unit}'"
    else:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").decode().split("\0")
        restart = f"stop pid {pid} (it runs in no systemd unit) and start it again: {shlex.join(argv)}"
    return (
        f"the running OpenSM (pid {pid}) has ibqos plugin {loaded} loaded, this ibqos is {_release()}: "
        f"restart it to load the installed plugin: {restart}"
    )


def _unified() -> Path | None:
    """The cgroup v2 hierarchy, where systemd puts each unit's processes (hybrid: unified/)."""
    for d in (Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup")):
        if (d / "cgroup.procs").is_file() and os.access(d, os.W_OK):
            return d
    return None


@contextmanager
def _in_cgroup(pid: int, leaf: str) -> Iterator[None]:
    """OpenSM `pid` moved into cgroup `…/LEAF`, as systemd runs a unit's process (a .service)
    or a login session's (a .scope); back where it was afterwards."""
    root = _unified()
    if root is None:
        pytest.skip("no writable cgroup v2 hierarchy to place OpenSM in")
    was = next(
        ln.split(":", 2)[2] for ln in Path(f"/proc/{pid}/cgroup").read_text().splitlines() if ln.startswith("0::")
    )
    top = root / f"ibqos-test-{uuid.uuid4().hex[:8]}.slice"
    (top / leaf).mkdir(parents=True)
    try:
        (top / leaf / "cgroup.procs").write_text(str(pid))
        yield
    finally:
        (root / was.lstrip("/") / "cgroup.procs").write_text(str(pid))
        (top / leaf).rmdir()
        top.rmdir()


def _older_records(real: dict) -> list[tuple[str, dict]]:
    """(the version apply names, the record) as older plugins wrote them for this OpenSM."""
    before = {k: v for k, v in real.items() if k != "plugin_version"}
    assert set(before) <= OLD_KEYS and {"osm_pid", "state", "ports"} <= set(before)
    return [("(before the version was recorded)", before), ("0.0.9", {**before, "plugin_version": "0.0.9"})]


def _plant(sm, record: dict) -> None:
    """`record` as the plugin record of OpenSM `sm`, once its start has settled: the heavy sweep
    ibsim's OpenSM makes about 2 s after its first SUBNET UP rewrites the record (the monitor's
    test, faster on the patched ibsim, planted before it at fb92dca and read the real one)."""
    sm.wait_settled()
    tmp = sm.dumps / f"{RECORD_FILE}.planted"
    tmp.write_text(json.dumps(record))
    os.replace(tmp, sm.dumps / RECORD_FILE)  # as the plugin writes it: never half a file


@pytest.mark.parametrize("again", ["another plan", "the deployed plan"])
def test_apply_refuses_an_opensm_that_runs_an_older_plugin_before_anything_is_written(
    ibqos_cli, live_sm, tmp_path, again
):
    """Another plan, and the plan already deployed: that one ended early, 'no change' (exit 0),
    without looking at the plugin, so a restart owed after an upgrade passed as verified."""
    h, sm, _, path_a = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    assert run_apply(ibqos_cli, h, sm, path_b).returncode == 0  # ibqos.d/ with a version
    target = path_b if again == "the deployed plan" else path_a
    real = json.loads((sm.dumps / RECORD_FILE).read_text())
    state = sm.conf.parent / "ibqos.d"
    before, texts = state_tree(state), managed_texts(sm)
    for version, record in _older_records(real):
        _plant(sm, record)
        r = run_apply(ibqos_cli, h, sm, target)
        assert r.returncode == 3, r.stdout + r.stderr
        assert r.stderr.strip().splitlines() == [f"ibqos: error: {_refusal(sm.pid, version)}"], r.stderr
        assert "no change" not in r.stdout
        assert state_tree(state) == before and managed_texts(sm) == texts
        # no SIGHUP either: the planted record is still the one in force
        assert json.loads((sm.dumps / RECORD_FILE).read_text()) == record
    if target == path_b:
        _plant(sm, real)
        r = run_apply(ibqos_cli, h, sm, path_b)  # the plugin this ibqos's: no change, as before
        assert r.returncode == 0 and "no change" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("leaf", ["opensm@0x0002c903000a1234.service", "session-7.scope"])
def test_the_refusal_names_the_unit_opensm_runs_in_else_its_command_line(ibqos_cli, live_sm, tmp_path, leaf):
    """It said 'restart OpenSM (e.g. `systemctl restart opensm`)' whatever ran it: on a host with
    one OpenSM per port (opensm@GUID.service, PartOf=opensm.service) it restarts all of them. The OpenSM is
    placed in the cgroup systemd gives a unit's process (a .service) or a login session's (a
    .scope: no unit to name, so its command line)."""
    h, sm, _, path_a = live_sm
    real = json.loads((sm.dumps / RECORD_FILE).read_text())
    unit = leaf if leaf.endswith(".service") else None
    _plant(sm, _older_records(real)[1][1])
    with _in_cgroup(sm.pid, leaf):
        r = run_apply(ibqos_cli, h, sm, path_a)
        assert r.returncode == 3, r.stdout + r.stderr
        assert r.stderr.strip().splitlines() == [f"ibqos: error: {_refusal(sm.pid, '0.0.9', unit)}"], r.stderr
        st = run_status(ibqos_cli, h, sm, "--live", "--json")
        found = [f["message"] for f in json.loads(st.stdout)["findings"] if f["kind"] == "plugin-version"]
        assert (st.returncode, found) == (1, [_refusal(sm.pid, "0.0.9", unit)])


def test_the_running_plugin_names_its_release_and_status_reports_an_older_one(ibqos_cli, live_sm):
    h, sm, _, _ = live_sm
    real = json.loads((sm.dumps / RECORD_FILE).read_text())
    assert real["plugin_version"] == _release() and real["osm_pid"] == sm.pid

    def plugin_findings() -> tuple[int, list[str]]:
        r = run_status(ibqos_cli, h, sm, "--live", "--json")
        found = [f["message"] for f in json.loads(r.stdout)["findings"] if f["kind"] == "plugin-version"]
        return r.returncode, found

    assert plugin_findings() == (0, [])
    for version, record in _older_records(real):
        _plant(sm, record)
        assert plugin_findings() == (1, [_refusal(sm.pid, version)])


def test_a_dry_run_ends_as_the_apply_would_on_an_opensm_that_runs_an_older_plugin(ibqos_cli, live_sm, tmp_path):
    """The dry run did not look: it showed the diff and exited 0, for another plan and for the
    deployed one ('no change'), where the apply refuses, exit 3. Now the diff, then the apply's
    line, exit 3; nothing written either way, no sweep."""
    h, sm, _, path_a = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    assert run_apply(ibqos_cli, h, sm, path_b).returncode == 0
    real = json.loads((sm.dumps / RECORD_FILE).read_text())
    state = sm.conf.parent / "ibqos.d"
    before, texts = state_tree(state), managed_texts(sm)
    old = _older_records(real)[1][1]
    _plant(sm, old)
    for target, shown in ((path_a, "changed: "), (path_b, "no change")):
        r = run_apply(ibqos_cli, h, sm, target, "--dry-run")
        assert r.returncode == 3, r.stdout + r.stderr
        assert r.stderr.strip().splitlines() == [f"ibqos: error: {_refusal(sm.pid, '0.0.9')}"], r.stderr
        assert shown in r.stdout, r.stdout
        assert state_tree(state) == before and managed_texts(sm) == texts
    assert json.loads((sm.dumps / RECORD_FILE).read_text()) == old  # no SIGHUP
    _plant(sm, real)
    r = run_apply(ibqos_cli, h, sm, path_a, "--dry-run")
    assert r.returncode == 0 and "changed: " in r.stdout, r.stdout + r.stderr


def test_the_recovery_of_a_killed_apply_refuses_an_opensm_on_an_older_plugin_and_keeps_the_journal(
    ibqos_cli, live_sm, tmp_path
):
    """An apply killed after the swap, then the package upgraded without an OpenSM restart: the
    recovery (status --opensm-conf, the next apply) swept the new files through the old plugin
    and verified them. Now the apply's line, exit 3, the journal kept at 'swapped' and no
    sweep; once the OpenSM runs this release's plugin, status finishes it."""
    h, sm, _, _ = live_sm
    plan_b, path_b = make_plan_file(tmp_path, "b", 60)
    assert run_apply(ibqos_cli, h, sm, path_b, fault="journal:swapped").returncode == -9
    journal = sm.conf.parent / "ibqos.d" / "journal.json"
    real = json.loads((sm.dumps / RECORD_FILE).read_text())
    old = _older_records(real)[1][1]
    _plant(sm, old)
    for r in (run_status(ibqos_cli, h, sm), run_apply(ibqos_cli, h, sm, path_b)):
        assert r.returncode == 3, r.stdout + r.stderr
        assert r.stderr.strip().splitlines() == [f"ibqos: error: {_refusal(sm.pid, '0.0.9')}"], r.stderr
        assert json.loads(journal.read_text())["state"] == "swapped"
        assert json.loads((sm.dumps / RECORD_FILE).read_text()) == old  # no SIGHUP
    _plant(sm, real)
    r = run_status(ibqos_cli, h, sm)
    assert r.returncode == 0 and "swept, read back and verified v0001" in r.stdout, r.stdout + r.stderr
    assert programmed_equals(h, plan_b)


def test_a_plugin_file_replaced_under_the_running_opensm_is_refused_though_its_release_is_the_same(
    ibqos_cli, tmp_path, monkeypatch
):
    """An upgrade that keeps the release (a Debian revision that patches the plugin, a rebuild)
    renames a new libibqos.so over the one OpenSM loaded; its record still names this release,
    so apply verified the new files through the old plugin, exit 0. OpenSM's memory map shows
    the file it runs is no longer the installed one: apply refuses before anything is written
    and status --live reports plugin-version, as for another release."""
    lib = tmp_path / "lib"
    real = installed_plugin_copy(lib)  # the map names libibqos.so.1.0.0, not the link OpenSM opened
    monkeypatch.setenv("IBQOS_PLUGIN_DIR", str(lib))  # where the harness's OpenSM loads it from
    with sm_on_plan_a(tmp_path) as (h, sm, _, _):
        _, path_b = make_plan_file(tmp_path, "b", 60)
        assert run_apply(ibqos_cli, h, sm, path_b).returncode == 0  # ibqos.d/ with a version
        upgrade_plugin_copy(real)
        argv = Path(f"/proc/{sm.pid}/cmdline").read_bytes().rstrip(b"\0").decode().split("\0")
        line = (
            f"the running OpenSM (pid {sm.pid}) runs the ibqos plugin it loaded at its start from "
            f"{real}, which has been replaced since (an upgrade): restart it to load the installed "
            f"plugin: stop pid {sm.pid} (it runs in no systemd unit) and start it again: {shlex.join(argv)}"
        )
        _, path_c = make_plan_file(tmp_path, "c", 30)
        state = sm.conf.parent / "ibqos.d"
        before, texts, sweeps = state_tree(state), managed_texts(sm), sm.record().heavy_sweeps
        for target in (path_c, path_b):  # another plan, and the deployed one
            r = run_apply(ibqos_cli, h, sm, target)
            assert r.returncode == 3, r.stdout + r.stderr
            assert r.stderr.strip().splitlines() == [f"ibqos: error: {line}"], r.stderr
            assert state_tree(state) == before and managed_texts(sm) == texts
        assert sm.record().heavy_sweeps == sweeps
        st = run_status(ibqos_cli, h, sm, "--live", "--json")
        found = [f["message"] for f in json.loads(st.stdout)["findings"] if f["kind"] == "plugin-version"]
        assert (st.returncode, found) == (1, [line])
