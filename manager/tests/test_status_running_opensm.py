"""`ibqos status --live` and `ibqos monitor` name the routing engine in force from dla's
record, in the dump directory of the OpenSM that runs: its command line's --dump_files_dir
over its opensm.conf, and a relative dump_files_dir taken from its working directory
(/proc/PID/cwd), as `ibqos apply` takes them (osm_process.running_options). Before, both read
the file's dump_files_dir alone, a relative one from their own working directory: the record
of another OpenSM, or none. With no OpenSM process to ask, a relative path is one line, exit 2.

OpenSM's log is left empty here (just rotated), so the engine comes from the record alone."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from apply_helpers import live_sm, live_sm_patched, opensm_restarted  # noqa: F401 (fixture)
from ibqos import osmconf
from ibqos.fabric.dla_record import RECORD_FILE

pytestmark = pytest.mark.fabric


def _status(ibqos_cli, h, conf: Path, plan: Path, log: Path, cwd: Path, *extra):
    args = ("status", "--live", "--opensm-conf", conf, "--plan", plan, "--osm-log", log, "--sim-socket", h.sock)
    return ibqos_cli(*args, "--json", *extra, cwd=cwd, env=dict(os.environ))


def test_status_reads_the_record_where_opensms_command_line_dumps(ibqos_cli, live_sm, tmp_path):
    h, sm, _plan_a, path_a = live_sm
    log, elsewhere, dumps = tmp_path / "rotated.log", tmp_path / "admin", tmp_path / "osm-dumps"
    for d in (elsewhere, dumps):
        d.mkdir()
    log.write_text("")
    with opensm_restarted(h, sm, tmp_path / "osm", "--dump_files_dir", "../osm-dumps", dumps=dumps) as osm:
        (sm.dumps / RECORD_FILE).unlink()  # the stopped OpenSM's, in the file's dump_files_dir
        cp = _status(ibqos_cli, h, sm.conf, path_a, log, elsewhere, "--pid", osm.pid)
        assert cp.returncode == 0, cp.stdout + cp.stderr
        assert json.loads(cp.stdout)["engine"] == "dla"


def test_a_relative_dump_files_dir_is_the_running_opensms(ibqos_cli, live_sm_patched, tmp_path):
    h, sm, _plan_a, path_a = live_sm_patched
    log, elsewhere, osm_cwd = tmp_path / "rotated.log", tmp_path / "admin" / "home", tmp_path / "osm"
    elsewhere.mkdir(parents=True)  # where the relative path names no directory
    log.write_text("")
    text = sm.conf.read_text()
    rel = os.path.relpath(sm.dumps, osm_cwd)
    assert osmconf.options(sm.conf)["dump_files_dir"] == str(sm.dumps)
    text = text.replace(f"dump_files_dir {sm.dumps}", f"dump_files_dir {rel}")
    sm.conf.write_text(text)
    copy = tmp_path / "copy" / "opensm.conf"  # no OpenSM reads it
    copy.parent.mkdir()
    copy.write_text(text)
    line = next(n for n, ln in enumerate(text.splitlines(), 1) if ln.startswith("dump_files_dir "))
    with opensm_restarted(h, sm, osm_cwd):
        # no --pid: the OpenSM that reads the file (by inode) is found
        cp = _status(ibqos_cli, h, sm.conf, path_a, log, elsewhere)
        assert cp.returncode == 0, cp.stdout + cp.stderr
        assert json.loads(cp.stdout)["engine"] == "dla"
        mon = ("monitor", "--plan", path_a, "--osm-log", log, "--sim-socket", h.sock, "--once", "--json")
        cp = ibqos_cli(*mon, "--interval", "0.2", "--opensm-conf", sm.conf, cwd=elsewhere, env=dict(os.environ))
        assert cp.returncode in (0, 1) and cp.stdout, cp.stdout + cp.stderr
        assert json.loads(cp.stdout)["engine"] == "dla"

        # no OpenSM to take the working directory from: said, exit 2, before the fabric is read
        for cp, ask in (
            (_status(ibqos_cli, h, copy, path_a, log, elsewhere), "give --pid, --pidfile or --service"),
            (
                ibqos_cli(*mon, "--opensm-conf", copy, cwd=elsewhere, env=dict(os.environ)),
                "none reads this file: start it, or make it absolute",
            ),
        ):
            assert cp.returncode == 2, cp.stdout + cp.stderr
            assert cp.stderr.startswith(
                f"ibqos: error: {copy}:{line}: dump_files_dir: {rel} is relative: OpenSM opens it from its "
                f"own working directory, which ibqos reads from a running OpenSM only: {ask}"
            ), cp.stderr
            assert len(cp.stderr.splitlines()) == 1, cp.stderr


def test_a_pid_that_reads_another_conf_is_refused_as_apply_refuses_it(ibqos_cli, live_sm, tmp_path):
    """--opensm-conf CONF --pid P, P an OpenSM that reads another file: before, status checked
    CONF's state and a recovery sweep would have gone to P; now one line naming both, exit 2,
    the line and exit code apply gives (osm_process.check_reads); and so does apply's dry run
    (before: it previewed the files with P's command line, exit 0)."""
    h, sm, _plan_a, path_a = live_sm
    copy = tmp_path / "copy" / "opensm.conf"  # another file, with the same text
    copy.parent.mkdir()
    copy.write_text(sm.conf.read_text())
    target = ("--opensm-conf", copy, "--pid", sm.pid, "--sim-socket", h.sock)
    said = []
    for cmd in (("status", *target), ("apply", path_a, *target), ("apply", path_a, *target, "--dry-run")):
        cp = ibqos_cli(*cmd, env=dict(os.environ))
        assert cp.returncode == 2, cp.stdout + cp.stderr
        assert len(cp.stderr.splitlines()) == 1, cp.stderr
        said.append(cp.stderr)
    assert said[0] == said[1] == said[2]
    assert said[0].startswith(f"ibqos: error: {copy}: --opensm-conf: OpenSM (pid {sm.pid}) reads {sm.conf} "), said[0]
    assert not (copy.parent / "ibqos.d").exists()


@pytest.mark.parametrize("given", [True, False], ids=["pid", "reader"])
def test_a_relative_log_file_is_the_running_opensms(ibqos_cli, live_sm, tmp_path, given):
    """opensm.conf's `log_file opensm.log`, OpenSM started without -f in its own directory:
    status reads the engine in force from the log there, for the OpenSM --pid names and for
    the one found reading the file (no --pid, as its dumps are found). Before, it read
    ./opensm.log of its own working directory: here another OpenSM's log, naming minhop
    (without --pid still so before this test's 'reader' case)."""
    h, sm, _plan_a, path_a = live_sm
    elsewhere, osm_cwd = tmp_path / "admin", tmp_path / "osm"
    elsewhere.mkdir()
    (elsewhere / "opensm.log").write_text(
        "Nov 25 03:10:00 123456 [7F00] 0x02 -> minhop tables configured on all switches\n"
    )
    text = sm.conf.read_text()
    log_line = next(ln for ln in text.splitlines() if ln.startswith("log_file "))
    sm.conf.write_text(text.replace(log_line, "log_file opensm.log"))
    with opensm_restarted(h, sm, osm_cwd, log=False) as osm:
        assert (osm_cwd / "opensm.log").is_file()
        args = ("status", "--live", "--opensm-conf", sm.conf, "--plan", path_a, "--sim-socket", h.sock)
        pid = ("--pid", osm.pid) if given else ()
        cp = ibqos_cli(*args, *pid, "--json", cwd=elsewhere, env=dict(os.environ))
        assert cp.stdout, cp.stderr
        assert json.loads(cp.stdout)["engine"] == "dla", cp.stdout + cp.stderr


def test_a_relative_partitions_file_with_no_opensm_to_ask_is_said_not_checked(ibqos_cli, live_sm, tmp_path):
    """A plan without partitions leaves the SM's own partitions file in force, and status holds
    its IPoIB SLs to the plan's classes; a relative partition_config_file is opened from the
    running OpenSM's working directory. With no OpenSM that reads the file to ask, the check was
    skipped unsaid (its file lies anywhere); now a note names the line and why, the check not
    done. A file of that name lies where ibqos runs: not the one OpenSM would open, not read."""
    h, sm, _plan_a, path_a = live_sm
    here = tmp_path / "admin"
    here.mkdir()
    (here / "partitions.conf").write_text("Default=0x7fff, ipoib, sl=7 : ALL=full;\n")
    copy = tmp_path / "copy" / "opensm.conf"  # no OpenSM reads it
    copy.parent.mkdir()
    copy.write_text(osmconf.merge(sm.conf.read_text(), {"partition_config_file": "partitions.conf"}, "the admin"))
    line = osmconf.line_of(copy.read_text(), "partition_config_file")
    cp = _status(ibqos_cli, h, copy, path_a, sm.log, here)
    assert cp.returncode == 1, cp.stdout + cp.stderr  # other-config: this host's OpenSM reads sm.conf
    doc = json.loads(cp.stdout)
    assert [f["kind"] for f in doc["findings"]] == ["other-config"], doc["findings"]
    assert (
        f"the SM's own partitions file not checked against the plan's classes: {copy}:{line}: partition_config_file: "
        "partitions.conf is relative: OpenSM opens it from its own working directory, which ibqos reads from a "
        "running OpenSM only: give --pid, --pidfile or --service, or make it absolute"
    ) in doc["notes"], doc["notes"]
