"""Issue 20 item 4: history you can trust, against a daemon OpenSM on ibsim. `ibqos history`
lists the versions, `ibqos rollback` re-applies one through the apply pipeline (sweep, read
back, check against its plan, roll back on failure), the admin's original files are never
pruned while failed versions are, a version changed by hand is found and refused, an
unchanged plan writes nothing, and each apply or rollback sends one line to syslog. Item 3's
live half: dropping the partitions a fabric carries needs --allow-pkey-removal."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import tempfile
from pathlib import Path

import pytest
import yaml
from apply_helpers import (
    child_env,
    live_sm,  # noqa: F401 (fixture)
    make_plan_file,
    managed_texts,
    programmed_equals,
    run_apply,
    run_rollback,
    run_status,
    sm_on_plan_a,
)
from ibqos.paths import REPO_ROOT
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from tree_snapshot import changes, snapshot

pytestmark = pytest.mark.fabric


class Syslog:
    """A datagram socket standing in for /dev/log (IBQOS_SYSLOG_SOCKET points ibqos at it)."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="ibqos-log-")  # short: a socket path has 108 bytes
        self.path = os.path.join(self.dir, "log")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.setblocking(False)

    def lines(self) -> list[str]:
        out = []
        while True:
            try:
                out.append(self.sock.recv(65536).decode().rstrip("\x00"))  # SysLogHandler ends with NUL
            except BlockingIOError:
                return out

    def close(self) -> None:
        self.sock.close()
        os.unlink(self.path)
        os.rmdir(self.dir)


@pytest.fixture
def syslog():
    s = Syslog()
    try:
        yield s
    finally:
        s.close()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _history(ibqos_cli, sm) -> list[dict]:
    r = ibqos_cli("history", "--opensm-conf", str(sm.conf), "--json", env=child_env())
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


def _state(sm) -> Path:
    return sm.conf.parent / "ibqos.d"


def test_history_rollback_and_one_syslog_line_each(ibqos_cli, live_sm, tmp_path, syslog):
    h, sm, plan_a, _ = live_sm
    plan_b, path_b = make_plan_file(tmp_path, "b", 25)
    _, path_c = make_plan_file(tmp_path, "c", 30)
    env = {"IBQOS_SYSLOG_SOCKET": syslog.path, "SUDO_USER": "alice"}
    for path, version in ((path_b, "v0001"), (path_c, "v0002")):
        r = run_apply(ibqos_cli, h, sm, path, env=env)
        assert r.returncode == 0, r.stdout + r.stderr
        lines = syslog.lines()
        assert len(lines) == 1, lines
        assert f"plan sha256 {_sha(path)[:16]} by alice: verified {version}" in lines[0]
        assert lines[0].startswith("<30>ibqos[")  # facility daemon, level info
    rows = _history(ibqos_cli, sm)
    assert [(r["version"], r["result"], r["current"]) for r in rows] == [
        ("v0000", "original", False),
        ("v0001", "verified", False),
        ("v0002", "verified", True),
    ]
    assert rows[1]["plan_sha256"] == _sha(path_b) and rows[1]["who"] == "alice"

    r = run_rollback(ibqos_cli, h, sm, env=env)  # the previous verified version: v0001, plan B
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rollback to v0001, the previous verified version" in r.stdout
    assert "configuration v0002 → v0003" in r.stdout and "read back: every port equals the plan" in r.stdout
    assert programmed_equals(h, plan_b)
    lines = syslog.lines()
    assert len(lines) == 1 and f"rollback to v0001 {sm.conf} plan sha256 {_sha(path_b)[:16]}" in lines[0], lines
    assert lines[0].endswith("verified v0003")

    r = run_rollback(ibqos_cli, h, sm, "v0000", env=env)  # the admin's own files: plan A as the SM started
    assert r.returncode == 0, r.stdout + r.stderr
    assert "v0000 has no plan (the admin's own files)" in r.stdout
    assert programmed_equals(h, plan_a)
    assert len(syslog.lines()) == 1
    rows = _history(ibqos_cli, sm)
    assert [(r["version"], r["rollback_of"], r["result"]) for r in rows[3:]] == [
        ("v0003", "v0001", "verified"),
        ("v0004", "v0000", "verified"),
    ]
    human = ibqos_cli("history", "--opensm-conf", str(sm.conf), env=child_env())
    assert human.returncode == 0 and "the admin's original files" in human.stdout, human.stdout


def test_a_failed_rollback_is_rolled_back_and_failed_versions_are_pruned(ibqos_cli, live_sm, tmp_path, syslog):
    h, sm, _, _ = live_sm
    plan_b, path_b = make_plan_file(tmp_path, "b", 25)
    # 16-entry tables: more than ibsim's 8-entry ports hold, so the plugin refuses them
    _, path_big = make_plan_file(tmp_path, "big", 30, cap=16)
    env = {"IBQOS_SYSLOG_SOCKET": syslog.path}
    assert run_apply(ibqos_cli, h, sm, path_b, "--keep", "2", env=env).returncode == 0
    for _ in range(3):
        r = run_apply(ibqos_cli, h, sm, path_big, "--keep", "2", env=env)
        assert r.returncode == 1 and "rolled back" in r.stderr, r.stdout + r.stderr
    lines = syslog.lines()
    assert len(lines) == 4 and all("rolled back" in ln for ln in lines[1:]), lines
    # v0002 (rolled back) is pruned like any other; v0000 (the admin's files) is kept for good
    assert sorted(p.name for p in _state(sm).iterdir() if p.name.startswith("v")) == [
        "v0000",
        "v0001",
        "v0003",
        "v0004",
    ]
    r = run_rollback(ibqos_cli, h, sm, "v0004", env=env)  # a version OpenSM refuses: the rollback rolls back
    assert r.returncode == 1, r.stdout + r.stderr
    assert "rolled back to v0001, fabric verified as before" in r.stderr and "Traceback" not in r.stderr
    assert programmed_equals(h, plan_b)
    assert os.readlink(_state(sm) / "current") == "v0001"
    assert _history(ibqos_cli, sm)[-1]["result"] == "rolled back"
    assert len(syslog.lines()) == 1


def test_a_version_changed_by_hand_is_found_and_refused(ibqos_cli, live_sm, tmp_path):
    h, sm, _, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 25)
    plan_c, path_c = make_plan_file(tmp_path, "c", 30)
    assert run_apply(ibqos_cli, h, sm, path_b).returncode == 0
    v1 = _state(sm) / "v0001"
    assert all(stat.S_IMODE(p.stat().st_mode) & 0o222 == 0 for p in (v1, *v1.iterdir()))  # read-only
    policy = Path(os.path.realpath(sm.conf)).parent / "qos-policy.conf"
    with open(policy, "a") as f:  # root edits through the managed path, mode or not
        f.write("# tuned by hand\n")
    want = f"TAMPERED: {v1} changed since ibqos wrote it (qos-policy.conf differ from its manifest.json)"
    for r in (ibqos_cli("history", "--opensm-conf", str(sm.conf), env=child_env()), run_status(ibqos_cli, h, sm)):
        assert r.returncode == 1 and r.stderr.count("\n") == 1 and want in r.stderr, r.stdout + r.stderr
    before = managed_texts(sm)
    r = run_apply(ibqos_cli, h, sm, path_c)
    assert r.returncode == 1 and want in r.stderr and "--accept-edits" in r.stderr, r.stdout + r.stderr
    assert managed_texts(sm) == before
    r = run_apply(ibqos_cli, h, sm, path_c, "--accept-edits")
    assert r.returncode == 0, r.stdout + r.stderr
    assert programmed_equals(h, plan_c)
    assert [r["tampered"] for r in _history_rows_allowing_tamper(ibqos_cli, sm)] == [[], ["qos-policy.conf"], []]
    # a manifest removed by hand would otherwise switch the check off for its version
    v3 = _state(sm) / "v0002"
    os.chmod(v3, 0o755)
    (v3 / "manifest.json").unlink()
    want = f"TAMPERED: {v3} changed since ibqos wrote it (its manifest.json is gone or unreadable"
    r = run_status(ibqos_cli, h, sm)
    assert r.returncode == 1 and want in r.stderr, r.stdout + r.stderr


def _history_rows_allowing_tamper(ibqos_cli, sm) -> list[dict]:
    r = ibqos_cli("history", "--opensm-conf", str(sm.conf), "--json", env=child_env())
    assert r.returncode == 1, r.stderr  # a tampered version is a defect
    return json.loads(r.stdout)


def test_an_unchanged_plan_writes_nothing(ibqos_cli, live_sm, tmp_path, syslog):
    h, sm, _, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 25)
    env = {"IBQOS_SYSLOG_SOCKET": syslog.path}
    assert run_apply(ibqos_cli, h, sm, path_b, env=env).returncode == 0
    # the lock file is made and removed in ibqos.d/ (test_apply_lock): its mtime moves, nothing in it
    unlocked = ("apply.lock", ".")
    before = snapshot(_state(sm), skip=unlocked), managed_texts(sm), os.readlink(sm.conf)
    syslog.lines()
    r = run_apply(ibqos_cli, h, sm, path_b, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no change" in r.stdout and "applied" not in r.stdout
    after = snapshot(_state(sm), skip=unlocked), managed_texts(sm), os.readlink(sm.conf)
    assert changes(before[0], after[0]) == [] and before == after
    lines = syslog.lines()
    assert len(lines) == 1 and lines[0].endswith("no change (v0001)"), lines


def test_without_a_syslog_socket_apply_still_works(ibqos_cli, live_sm, tmp_path):
    h, sm, _, _ = live_sm
    plan_b, path_b = make_plan_file(tmp_path, "b", 25)
    r = run_apply(ibqos_cli, h, sm, path_b, env={"IBQOS_SYSLOG_SOCKET": str(tmp_path / "no-such-socket")})
    assert r.returncode == 0 and r.stderr == "", r.stdout + r.stderr
    assert programmed_equals(h, plan_b)


TENANTS = "Default=0x7fff : ALL=full ;\nt1=0x8101 : ALL=full ;\nt2=0x8102 : ALL=full ;\nt3=0x8103 : ALL=full ;\n"


def _tenant_plan(tmp: Path) -> tuple[object, Path]:
    doc = yaml.safe_load((REPO_ROOT / "examples" / "two-class.yaml").read_text())
    (tmp / "tenants.partitions.conf").write_text(TENANTS)
    doc["partitions"] = "tenants.partitions.conf"
    (tmp / "tenants.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    plan = make_plan(load_policy(tmp / "tenants.yaml"))
    plan.save(tmp / "tenants.plan.json")
    return plan, tmp / "tenants.plan.json"


def _ca_pkeys(h) -> str:
    """The P_Key table of the SM's own CA port, as OpenSM programmed it."""
    return h.diag(["smpquery", "pkeys", "-D", "0"]).stdout


def test_dropping_partitions_needs_allow_pkey_removal_and_never_dangles(ibqos_cli, tmp_path):
    part = tmp_path / "partitions.conf"  # OpenSM reads this path only at start
    part.write_text("Default=0x7fff : ALL=full ;\n")
    with sm_on_plan_a(tmp_path, conf={"partition_config_file": str(part)}) as (h, sm, plan_a, path_a):
        _, path_t = _tenant_plan(tmp_path)
        r = run_apply(ibqos_cli, h, sm, path_t)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "0x8101" in _ca_pkeys(h)
        before = managed_texts(sm), part.read_text()
        r = run_apply(ibqos_cli, h, sm, path_a)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stdout + r.stderr
        assert "--allow-pkey-removal: P_Keys 0x8101, 0x8102, 0x8103 would go from every port" in r.stderr
        assert (managed_texts(sm), part.read_text()) == before and "0x8101" in _ca_pkeys(h)
        r = run_apply(ibqos_cli, h, sm, path_a, "--allow-pkey-removal")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "P_Keys removed from every port: 0x8101, 0x8102, 0x8103" in r.stdout
        assert part.is_symlink() and part.exists() and part.read_text() == ""  # emptied, never dangling
        assert "0x8101" not in _ca_pkeys(h)
        assert programmed_equals(h, plan_a)


def test_a_killed_apply_gets_its_syslog_line_from_the_recovery(ibqos_cli, live_sm, tmp_path, syslog):
    h, sm, _, _ = live_sm
    plan_b, path_b = make_plan_file(tmp_path, "b", 25)
    env = {"IBQOS_SYSLOG_SOCKET": syslog.path}
    assert run_apply(ibqos_cli, h, sm, path_b, fault="journal:swapped", env=env).returncode == -9
    assert syslog.lines() == []  # SIGKILL: no line of its own
    r = ibqos_cli("status", "--opensm-conf", str(sm.conf), "--sim-socket", h.sock, env=child_env(env))
    assert r.returncode == 0, r.stdout + r.stderr
    lines = syslog.lines()
    assert len(lines) == 1 and "recovered" in lines[0] and "verified v0001; it stays" in lines[0], lines
    assert programmed_equals(h, plan_b)
