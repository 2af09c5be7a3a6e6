"""ibqos.d's own files after a crash or on a full or read-only filesystem: a history line cut
short (the process killed inside append(), or ENOSPC) stays one skipped line, and the
applies after it append whole lines that `ibqos history` and `ibqos rollback` go on reading;
an apply that meets ENOSPC names the file and stops before the swap with nothing changed;
`ibqos status --opensm-conf` on a read-only /etc (or as a user who cannot write there)
reports instead of failing on the lock it cannot take."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest
from apply_helpers import (
    child_env,
    live_sm,  # noqa: F401 (fixture)
    make_plan_file,
    paused_apply,
    programmed_equals,
    run_apply,
    run_rollback,
)

pytestmark = pytest.mark.fabric


def test_a_history_line_cut_by_a_crash_does_not_poison_the_lines_after_it(ibqos_cli, live_sm, tmp_path):
    h, sm, plan_a, path_a = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    assert run_apply(ibqos_cli, h, sm, path_b).returncode == 0
    hist = sm.conf.parent / "ibqos.d" / "history.jsonl"
    whole = hist.read_bytes()
    hist.write_bytes(whole + whole.splitlines()[-1][:25])  # an append cut after 25 bytes

    assert run_apply(ibqos_cli, h, sm, path_a).returncode == 0
    assert run_apply(ibqos_cli, h, sm, path_b).returncode == 0
    cp = ibqos_cli("history", "--opensm-conf", sm.conf, "--json")
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert [r["result"] for r in json.loads(cp.stdout)] == ["original", "verified", "verified", "verified"]
    cp = run_rollback(ibqos_cli, h, sm)  # its default target comes from the history
    assert cp.returncode == 0 and "rollback to v0002" in cp.stdout, cp.stdout + cp.stderr
    assert programmed_equals(h, plan_a)
    assert len(hist.read_text().splitlines()) == len(whole.splitlines()) + 4  # the cut line, ended, + 3


@contextmanager
def small_etc(tmp_path: Path, sm, copy_files: bool = True):
    """A 256 KiB tmpfs holding a copy of the SM's opensm.conf and (`copy_files`) the files it
    names; the SM's -F path links to the copy (apply refuses a conf its OpenSM does not read).
    OpenSM reads those files' paths only at start: an apply that sweeps and verifies needs
    them left where they are."""
    etc = tmp_path / "etc"
    etc.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(etc)], check=True)
    try:
        text = sm.conf.read_text()
        for key, path in re.findall(r"(?m)^(qos_policy_file|event_plugin_options) (\S+)$", text * copy_files):
            shutil.copy(path, etc / Path(path).name)
            text = text.replace(f"{key} {path}", f"{key} {etc / Path(path).name}")
        (etc / "opensm.conf").write_text(text)
        sm.conf.unlink()
        sm.conf.symlink_to(etc / "opensm.conf")
        yield etc
    finally:
        subprocess.run(["umount", "-l", str(etc)], check=False)


def test_a_full_etc_stops_before_the_swap_and_a_read_only_one_still_has_a_status(ibqos_cli, live_sm, tmp_path):
    h, sm, _plan_a, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    with small_etc(tmp_path, sm) as etc:
        conf = etc / "opensm.conf"
        before = {p.name: p.read_bytes() for p in etc.iterdir()}
        subprocess.run(["dd", "if=/dev/zero", f"of={etc}/fill", "bs=1k", "count=1000"], capture_output=True)
        args = ("apply", path_b, "--opensm-conf", conf, "--pid", sm.pid, "--sim-socket", h.sock)
        cp = ibqos_cli(*args, env=child_env())
        assert cp.returncode == 3, cp.stdout + cp.stderr
        line = cp.stderr.strip()
        assert line.startswith(f"ibqos: error: {etc}/") and "No space left on device" in line, line
        assert line.endswith("stopped before the swap, nothing changed"), line
        assert {p.name: p.read_bytes() for p in etc.iterdir() if p.name in before} == before
        assert not list((etc / "ibqos.d").glob(".v*"))  # no staging left behind

        (etc / "fill").unlink()
        subprocess.run(["mount", "-o", "remount,ro", str(etc)], check=True)
        cp = ibqos_cli("status", "--opensm-conf", conf, env=child_env())
        assert cp.returncode == 0, cp.stdout + cp.stderr
        # the full disk stopped it before the admin's files were adopted: no version yet (this
        # line said 'configuration None, 0 version(s) kept')
        assert cp.stdout.startswith(f"{conf}: not managed by ibqos apply yet"), cp.stdout


def test_a_killed_apply_whose_opensm_restarted_says_what_to_give(ibqos_cli, live_sm, tmp_path):
    """The journal holds the PID of the OpenSM the killed apply signalled; after a restart
    (systemd, a reboot) that process is gone, and status must say so next to what it found."""
    h, sm, _plan_a, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    assert run_apply(ibqos_cli, h, sm, path_b, fault="journal:swapped").returncode == -9
    pid = sm.pid
    sm.stop()
    cp = ibqos_cli("status", "--opensm-conf", sm.conf, "--sim-socket", h.sock, env=child_env())
    assert cp.returncode == 3, cp.stdout + cp.stderr
    line = cp.stderr.strip()
    assert "found apply of v0001" in line and "stopped at 'swapped'" in line, line
    assert f"no process {pid}" in line and "give --pid or --service of the running OpenSM" in line, line


def test_a_removed_current_version_is_named_by_status_and_history(ibqos_cli, live_sm, tmp_path):
    """`rm -rf ibqos.d/v0001` (to free space, say) while it is current: every managed path is a
    dangling link, and OpenSM reads none of them from its next sweep or start on."""
    h, sm, _plan_a, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    assert run_apply(ibqos_cli, h, sm, path_b).returncode == 0
    state = sm.conf.parent / "ibqos.d"
    subprocess.run(["chmod", "-R", "u+w", str(state / "v0001")], check=True)
    shutil.rmtree(state / "v0001")
    assert not sm.conf.exists()  # dangling
    for cp in (
        ibqos_cli("status", "--opensm-conf", sm.conf, env=child_env()),
        ibqos_cli("history", "--opensm-conf", sm.conf, env=child_env()),
    ):
        assert cp.returncode == 1, cp.stdout + cp.stderr
        assert f"BROKEN: {state / 'current'} points at v0001, which is not in {state}" in cp.stderr
        assert f"ln -sfn v0000 {state / 'current'}" in cp.stderr
    subprocess.run(["ln", "-sfn", "v0000", str(state / "current")], check=True)  # as the line says
    assert ibqos_cli("status", "--opensm-conf", sm.conf, env=child_env()).returncode == 0


def test_status_as_a_user_who_cannot_take_the_lock_reports(ibqos_cli, live_sm, tmp_path):
    """A monitoring check that may read ibqos.d but not write it (here: root without the
    capabilities that bypass file permissions, on a store owned by nobody)."""
    h, sm, _plan_a, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    assert run_apply(ibqos_cli, h, sm, path_b).returncode == 0
    subprocess.run(["chown", "-R", "nobody:nogroup", str(sm.conf.parent / "ibqos.d")], check=True)
    drop = "cap_dac_override,cap_dac_read_search,cap_fowner,cap_chown"
    argv = " ".join([*ibqos_cli.argv, "status", "--opensm-conf", str(sm.conf)])
    cp = subprocess.run(["capsh", f"--drop={drop}", "--", "-c", argv], capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert cp.stdout.startswith(f"{sm.conf}: configuration v0001")


def test_apply_on_a_read_only_etc_says_so_in_one_line_and_changes_nothing(ibqos_cli, live_sm, tmp_path):
    """/etc mounted read-only (a rescue boot, an image-based host): before, the lock's open
    failed into the generic OSError line, exit 2 (bad input), though the plan and options
    were fine; now one line naming the path and saying nothing changed, exit 3, as on a full
    /etc, for apply, its dry run aside (it writes nothing), and rollback."""
    h, sm, _plan_a, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    with small_etc(tmp_path, sm) as etc:
        conf = etc / "opensm.conf"
        args = ("--opensm-conf", conf, "--pid", sm.pid, "--sim-socket", h.sock)
        (etc / "ibqos.d").mkdir()  # as an earlier apply left it
        before = {p: p.read_bytes() for p in etc.rglob("*") if p.is_file()}
        subprocess.run(["mount", "-o", "remount,ro", str(etc)], check=True)
        for cmd in (("apply", path_b), ("rollback", "v0000")):
            cp = ibqos_cli(*cmd, *args, env=child_env())
            assert cp.returncode == 3, cp.stdout + cp.stderr
            assert cp.stderr.splitlines() == [
                f"ibqos: error: {etc / 'ibqos.d' / 'apply.lock'}: Read-only file system: cannot take the "
                "apply lock, nothing changed"
            ], cp.stderr
        cp = ibqos_cli("apply", path_b, *args, "--dry-run", env=child_env())
        assert cp.returncode == 0, cp.stdout + cp.stderr
        assert {p: p.read_bytes() for p in etc.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize(
    ("point", "failed", "when"),
    [
        ("flip", "journal.json", "before its sweep"),  # the journal's 'swapped'
        ("readback", "readbacks/v0001.fabric.json", "at 'swept'"),  # the verified fabric's copy
    ],
)
def test_a_full_etc_right_after_the_swap_says_what_is_on_disk_and_status_finishes_it(
    ibqos_cli, live_sm, tmp_path, point, failed, when
):
    """The version was written whole, then /etc filled up (a log, a core dump) before the
    journal could say 'swapped': before, the bare OSError line, exit 2 (bad input), with new
    files on disk that OpenSM reads at its next heavy sweep, unverified, and nothing saying
    so. Now one line saying the new version is on disk, unswept, and what finishes it, exit 3;
    once there is room, status sweeps and verifies it."""
    h, sm, _plan_a, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    with small_etc(tmp_path, sm, copy_files=False) as etc:
        conf = etc / "opensm.conf"
        args = ("--opensm-conf", str(conf), "--pid", str(sm.pid), "--sim-socket", h.sock)
        with paused_apply(tmp_path, point, ("apply", path_b, *args)) as resume:
            subprocess.run(["dd", "if=/dev/zero", f"of={etc}/fill", "bs=1k", "count=1000"], capture_output=True)
            rc, out, err_lines = resume()
        assert rc == 3, out + "\n".join(err_lines)
        assert err_lines == [
            f"ibqos: error: {etc / 'ibqos.d' / failed}: No space left on device: after the swap to "
            f"v0001, {when}: the new files are on disk, unverified; once there is room, 'ibqos status "
            f"--opensm-conf {conf}' sweeps and verifies them, or rolls them back"
        ], err_lines
        (etc / "fill").unlink()
        cp = ibqos_cli("status", *args, env=child_env())
        assert cp.returncode == 0, cp.stdout + cp.stderr
        assert "read back and verified v0001; it stays" in cp.stdout, cp.stdout


def test_a_lock_file_that_cannot_be_locked_is_one_line_naming_it(ibqos_cli, live_sm, tmp_path):
    """ibqos.d/apply.lock replaced by a FIFO (a config-management tool, a hand's mkfifo): the
    lock's errors came out as a bare OSError without a file name, which status let through as
    'ibqos: error: : Invalid argument' (exit 2) and apply printed as 'None: Invalid argument:
    cannot take the apply lock'. Now apply names the file and why, exit 3, nothing changed;
    status reports as for a lock it may not take, and with a killed apply to finish says
    which file kept it from doing so, exit 3."""
    import os

    h, sm, _plan_a, path_a = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    assert run_apply(ibqos_cli, h, sm, path_b).returncode == 0
    lock = sm.conf.parent / "ibqos.d" / "apply.lock"
    assert not lock.exists()  # the apply that held it removed it (test_apply_lock)
    os.mkfifo(lock)
    cp = ibqos_cli("status", "--opensm-conf", sm.conf, env=child_env())
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert cp.stdout.startswith(f"{sm.conf}: configuration v0001"), cp.stdout

    # OpenSM's own log and dumps live beside its conf here, written at every light sweep (2 s)
    def ours() -> dict[Path, bytes]:
        return {
            p: p.read_bytes()
            for p in sm.conf.parent.rglob("*")
            if p.is_file() and p.name != "osm.log" and "dumps" not in p.parts
        }

    before = ours()
    cp = run_apply(ibqos_cli, h, sm, path_a)
    assert cp.returncode == 3, cp.stdout + cp.stderr
    assert cp.stderr.splitlines() == [
        f"ibqos: error: {lock}: not a regular file: cannot take the apply lock, nothing changed"
    ], cp.stderr
    assert ours() == before

    lock.unlink()
    assert run_apply(ibqos_cli, h, sm, path_a, fault="journal:swapped").returncode == -9
    lock.unlink()  # the killed apply's, left behind: a SIGKILL runs no release
    os.mkfifo(lock)
    cp = ibqos_cli("status", "--opensm-conf", sm.conf, env=child_env())
    assert cp.returncode == 3, cp.stdout + cp.stderr
    assert cp.stderr.splitlines() == [
        f"ibqos: error: {lock}: not a regular file, and an apply of v0002 stopped at 'swapped': "
        "run this as a user who may write there to finish or roll it back"
    ], cp.stderr
