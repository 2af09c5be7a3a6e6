"""A master/standby pair on one fabric (two OpenSMs on two ibsim nodes, SIM_HOST): OpenSM A
runs plan A as master, then B starts with sm_priority 15 and A hands the subnet over and goes
STANDBY, keeping the plugin record it wrote as master (at `sweeping`, the sweep the handover
cut short). Before, `apply` on A passed the record check, swapped the files in, sent a SIGHUP
a standby ignores and waited out --timeout twice (the sweep, then the rollback's sweep). Now
`apply` asks the fabric which SM is master (sminfo) and refuses A in one line naming the
master, before anything changes; `status --live` says which SM is master; `apply` on B's host
(its port, SIM_HOST) applies and verifies as usual."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest
from apply_helpers import (
    apply_args,
    child_env,
    installed_plugin_copy,
    make_plan_file,
    managed_texts,
    paused_apply,
    programmed_equals,
    run_apply,
    sm_on_plan_a,
    state_tree,
    upgrade_plugin_copy,
)
from ibqos import __version__
from ibqos.fabric.dla_record import RECORD_FILE
from ibqos.fabric.live import read_live
from ibqos.proc import wait_until
from ibqos_sim.harness.ibsim_binary import patched_skip_reason

B_NODE = "ca-g1-s0-h0"
# Debian's ibsim never times a forwarded MAD out (libumad2sim has no MAD timeouts): B, still
# before its first sweep, drops A's SMInfo Get (OpenSM answers one only once it has found its
# own port) and A waits for the answer forever, never ending that sweep nor handing over
# (about one pair in three). The patched ibsim returns such a request after 5 s as timed out
# (ci-sim/ibsim-patch/0006-forwarded-request-timeout.patch), at Debian's 8-entry ports
# (`-a 8`, as sm_on_plan_a's plans expect).
SKIP = patched_skip_reason()
pytestmark = [pytest.mark.fabric, pytest.mark.skipif(SKIP is not None, reason=SKIP or "")]
# A handover that reaches B during its first sweep is ignored there (OpenSM: "we will discover
# it later on") while A goes STANDBY: two standbys, until B's polls of A (sminfo_polling_timeout,
# polling_retry_number 4) declare it gone, 50 s at OpenSM's 10 s; 1 s here.
B_CONF = {"sm_priority": 15, "sminfo_polling_timeout": 1000}


def start_b(h, tmp_path: Path):
    """OpenSM B, priority 15, on B_NODE: it takes the subnet over from A."""
    return h.start_sm(
        engine="dla,minhop",
        plugin=True,
        conf_files=[tmp_path / "cfg-a" / "opensm.conf"],
        conf=B_CONF,
        sim_host=B_NODE,
        name="smB",
        timeout=60,
    )


def handed_over(h, a, tmp_path: Path):
    """(B, A's port, B's port): B started, and A has handed the subnet over to it (A's log
    says STANDBY, sminfo names B)."""
    b = start_b(h, tmp_path)
    fabric = read_live(h.env)
    port_b = next(n for n in fabric.nodes.values() if n.desc == B_NODE).ports[1]
    port_a = next(n for n in fabric.nodes.values() if n.desc == "ca-g0-s0-h0").ports[1]
    a.wait_for_log("Entering STANDBY state")
    wait_until(lambda: f"sm guid 0x{port_b.guid:x}," in h.diag(["sminfo"]).stdout, timeout=60)
    return b, port_a, port_b


@contextmanager
def master_then_standby(tmp_path: Path, first=lambda h, a, tmp: None) -> Iterator[tuple]:
    """(harness, A, B, plan A): A ran plan A as master (`first(h, A, tmp)` ran then), then
    handed the subnet over to B."""
    with sm_on_plan_a(tmp_path, ibsim="patched", ibsim_args=("-a", "8")) as (h, a, plan_a, _):
        first(h, a, tmp_path)
        b = start_b(h, tmp_path)
        yield h, a, b, plan_a


def test_apply_on_a_standby_that_was_master_names_the_master_and_changes_nothing(ibqos_cli, tmp_path):
    with master_then_standby(tmp_path) as (h, a, b, plan_a):
        _, path_b = make_plan_file(tmp_path, "b", 60)
        fabric = read_live(h.env)
        port_b = next(n for n in fabric.nodes.values() if n.desc == B_NODE).ports[1]
        port_a = next(n for n in fabric.nodes.values() if n.desc == "ca-g0-s0-h0").ports[1]
        a.wait_for_log("Entering STANDBY state")  # the handover, as A's log says it
        wait_until(lambda: f"sm guid 0x{port_b.guid:x}," in h.diag(["sminfo"]).stdout, timeout=60)
        assert a.alive() and b.alive() and programmed_equals(h, plan_a)
        state = a.conf.parent / "ibqos.d"
        before, texts, sweeps = state_tree(state), managed_texts(a), a.record().heavy_sweeps
        on_a = ("--opensm-conf", a.conf, "--pid", str(a.pid), "--sim-socket", h.sock)

        r = ibqos_cli("apply", path_b, *on_a, "--timeout", "20", env=child_env())
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 3, r.stdout + r.stderr
        master = f"master SM: 0x{port_b.guid:016x} (lid {port_b.lid}, priority 15)"
        assert lines == [
            f"ibqos: error: {master}; this OpenSM (pid {a.pid}, port 0x{port_a.guid:016x}) is not it "
            "(standby): a standby sweeps nothing, so no SIGHUP would take effect; apply on the master's "
            "host, or 'ibqos apply PLAN --standby' here to stage the version for when it takes over"
        ], r.stderr
        assert state_tree(state) == before and managed_texts(a) == texts
        assert a.record().heavy_sweeps == sweeps and programmed_equals(h, plan_a)
        # the preview ends as the apply would (before: the diff, exit 0)
        dry = ibqos_cli("apply", path_b, *on_a, "--dry-run", env=child_env())
        assert dry.returncode == 3 and dry.stderr == r.stderr, dry.stdout + dry.stderr
        assert f"changed: {a.conf}" in dry.stdout and state_tree(state) == before

        r = ibqos_cli("status", "--live", *on_a, env=child_env())
        assert f"{master}; this OpenSM (pid {a.pid}" in r.stdout, r.stdout + r.stderr

        # on the master's host (its port: SIM_HOST), the same plan applies and verifies
        r = ibqos_cli(
            "apply",
            path_b,
            *("--opensm-conf", b.conf, "--pid", str(b.pid), "--sim-socket", h.sock),
            env=child_env({"SIM_HOST": B_NODE}),
        )
        assert r.returncode == 0, r.stdout + r.stderr
        assert "read back: every port equals the plan" in r.stdout
        on_b = ("--opensm-conf", b.conf, "--pid", str(b.pid), "--sim-socket", h.sock)
        r = ibqos_cli("status", "--live", *on_b, env=child_env({"SIM_HOST": B_NODE}))
        assert f"{master}, this OpenSM (pid {b.pid})" in r.stdout, r.stdout + r.stderr


def test_status_does_not_sweep_a_standby_to_finish_a_killed_apply(ibqos_cli, tmp_path):
    """An apply killed after the swap on A, then A handed over to B: `status --opensm-conf`
    on A names the master instead of waiting for a sweep (and then a rollback's) that a
    standby never makes; the journal stays for A's host to finish once A is master again."""

    def killed_apply(h, a, tmp):
        _, path_b = make_plan_file(tmp, "b", 60)
        assert run_apply(ibqos_cli, h, a, path_b, fault="journal:swapped").returncode == -9

    with master_then_standby(tmp_path, killed_apply) as (h, a, _, _):
        journal = a.conf.parent / "ibqos.d" / "journal.json"
        assert json.loads(journal.read_text())["state"] == "swapped"
        port_b = next(n for n in read_live(h.env).nodes.values() if n.desc == B_NODE).ports[1]
        a.wait_for_log("Entering STANDBY state")
        wait_until(lambda: f"sm guid 0x{port_b.guid:x}," in h.diag(["sminfo"]).stdout, timeout=60)
        before = journal.read_bytes()
        r = ibqos_cli(
            "status",
            *("--opensm-conf", a.conf, "--pid", str(a.pid), "--sim-socket", h.sock, "--timeout", "10"),
            env=child_env(),
        )
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 3, r.stdout + r.stderr
        assert len(lines) == 1 and lines[0].startswith(
            f"ibqos: error: master SM: 0x{port_b.guid:016x} (lid {port_b.lid}, priority 15); this OpenSM (pid {a.pid}"
        ), r.stderr
        assert journal.read_bytes() == before


@contextmanager
def handover_mid_wait(ibqos_cli, tmp_path: Path) -> Iterator[SimpleNamespace]:
    """A is master when apply checks (sminfo) and swaps plan B's files in; B (priority 15)
    takes the subnet over while apply waits for A's heavy sweep (paused after the swap until
    sminfo names B). Yields what happened: the harness, A, B, plan A, plan B's file, A's and
    B's ports, the apply's exit code and stderr lines."""
    # A takes the subnet back within seconds of B's end (OpenSM's polling: 10 s x 4 retries)
    a_conf = {"sminfo_polling_timeout": 1000}
    with sm_on_plan_a(tmp_path, ibsim="patched", ibsim_args=("-a", "8"), conf=a_conf) as (h, a, plan_a, _):
        _, path_b = make_plan_file(tmp_path, "b", 60)
        texts = managed_texts(a)
        with paused_apply(tmp_path, "journal:swapped", apply_args(h, a, path_b, "--timeout", "20")) as resume:
            port_a = next(n for n in read_live(h.env).nodes.values() if n.desc == "ca-g0-s0-h0").ports[1]
            b = start_b(h, tmp_path)
            a.wait_for_log("Entering STANDBY state")
            port_b = next(n for n in read_live(h.env).nodes.values() if n.desc == B_NODE).ports[1]
            wait_until(lambda: f"sm guid 0x{port_b.guid:x}," in h.diag(["sminfo"]).stdout, timeout=60)
            rc, out, err_lines = resume()
        assert rc == 3, out + "\n".join(err_lines)
        assert b.alive()
        yield SimpleNamespace(
            h=h, a=a, b=b, plan_a=plan_a, path_b=path_b, port_a=port_a, port_b=port_b, err_lines=err_lines, texts=texts
        )


def test_a_handover_while_apply_waits_for_the_sweep_rolls_the_files_back_and_names_the_new_master(ibqos_cli, tmp_path):
    """Before, apply waited out --timeout for a sweep a standby never ends, then its
    rollback's as long, and ended on a timeout. Now the wait asks sminfo and stops at the
    handover: A's files are back on the previous version (not swept: a standby sweeps
    nothing; the journal stays at 'rollback' for when A is master again), and one line
    names the new master, exit 3."""
    with handover_mid_wait(ibqos_cli, tmp_path) as w:
        h, a, port_a, port_b = w.h, w.a, w.port_a, w.port_b
        assert w.err_lines == [
            f"ibqos: error: master SM: 0x{port_b.guid:016x} (lid {port_b.lid}, priority 15); this OpenSM "
            f"(pid {a.pid}, port 0x{port_a.guid:016x}) is not it (standby): it handed the subnet over "
            "while v0001 was being swept; its files are back on v0000, not swept (a standby sweeps "
            f"nothing): 'ibqos status --opensm-conf {a.conf}' sweeps and proves them once it is master "
            "again; apply on the master's host"
        ], w.err_lines
        assert managed_texts(a) == w.texts  # what A reads when it is master again: the verified version
        state = a.conf.parent / "ibqos.d"
        assert (state / "current").readlink().name == "v0000"
        assert json.loads((state / "journal.json").read_text())["state"] == "rollback"

        # the promise of that line: once A is master again, status finishes the rollback
        w.b.stop()
        wait_until(lambda: f"sm guid 0x{port_a.guid:x}," in h.diag(["sminfo"], check=False).stdout, timeout=120)
        r = ibqos_cli(
            "status",
            *("--opensm-conf", a.conf, "--pid", str(a.pid), "--sim-socket", h.sock, "--timeout", "60"),
            env=child_env(),
        )
        assert r.returncode == 0, r.stdout + r.stderr
        assert "finished the rollback to v0000, fabric verified as before" in r.stdout, r.stdout
        assert json.loads((state / "journal.json").read_text())["state"] == "rolled-back"
        assert programmed_equals(h, w.plan_a)


def test_apply_standby_after_a_handover_mid_wait_stages_over_the_unfinished_apply(ibqos_cli, tmp_path):
    """The refusals suggest 'ibqos apply PLAN --standby' on a host whose SM is a standby. After
    a handover mid-wait (journal at 'rollback') or an apply killed there, that failed with
    'no process 0: is OpenSM running?' (the recovery looked for an OpenSM to sweep, though
    --standby names none). Now --standby closes the unfinished apply without signalling
    anything (its rollback's files stay on the previous version) and stages the plan."""
    with handover_mid_wait(ibqos_cli, tmp_path) as w:
        state = w.a.conf.parent / "ibqos.d"
        sweeps = w.a.record().heavy_sweeps
        r = ibqos_cli("apply", w.path_b, "--opensm-conf", w.a.conf, "--standby", env=child_env())
        assert r.returncode == 0, r.stdout + r.stderr
        lines = r.stdout.splitlines()
        assert lines[0].startswith("recovered: found apply of v0001") and lines[0].endswith(
            "stopped at 'rollback': its files are back on v0000 (unswept: --standby sweeps nothing)"
        ), r.stdout
        assert any(ln.startswith(f"staged {w.path_b} as v0002 for the standby SM") for ln in lines), r.stdout
        assert (state / "current").readlink().name == "v0002"
        assert json.loads((state / "journal.json").read_text())["state"] == "standby"
        assert w.a.record().heavy_sweeps == sweeps


def _older_plugin(dumps: Path, pid: int) -> dict:
    """The record OpenSM `pid` wrote, as a plugin of release 0.0.9 would have (planted as the
    plugin writes it: renamed over the record)."""
    rec = json.loads((dumps / RECORD_FILE).read_text())
    assert rec["osm_pid"] == pid
    old = {**rec, "plugin_version": "0.0.9"}
    (dumps / "planted").write_text(json.dumps(old))
    (dumps / "planted").rename(dumps / RECORD_FILE)
    return old


def test_apply_standby_refuses_a_standby_that_runs_another_releases_plugin(ibqos_cli, tmp_path):
    """A standby that was master has the record it wrote then: one naming another release's
    plugin (an upgrade it was not restarted after) took the staged version, exit 0, and would
    have programmed it through that plugin at its takeover. Now the apply's line, exit 3,
    nothing written (restarting a standby costs the fabric nothing)."""
    with master_then_standby(tmp_path) as (h, a, _b, _):
        _, path_b = make_plan_file(tmp_path, "b", 60)
        a.wait_for_log("Entering STANDBY state")
        port_b = next(n for n in read_live(h.env).nodes.values() if n.desc == B_NODE).ports[1]
        wait_until(lambda: f"sm guid 0x{port_b.guid:x}," in h.diag(["sminfo"]).stdout, timeout=60)
        _older_plugin(a.dumps, a.pid)
        state, texts = a.conf.parent / "ibqos.d", managed_texts(a)
        before = state_tree(state)
        r = ibqos_cli("apply", path_b, "--opensm-conf", a.conf, "--standby", "--sim-socket", h.sock, env=child_env())
        argv = Path(f"/proc/{a.pid}/cmdline").read_bytes().rstrip(b"\0").decode().split("\0")
        assert r.returncode == 3, r.stdout + r.stderr
        assert r.stderr.strip().splitlines() == [
            f"ibqos: error: the running OpenSM (pid {a.pid}) has ibqos plugin 0.0.9 loaded, this ibqos is "
            f"{__version__}: restart it to load the installed plugin: stop pid {a.pid} (it runs in no "
            f"systemd unit) and start it again: {shlex.join(argv)}"
        ], r.stderr
        assert state_tree(state) == before and managed_texts(a) == texts


@pytest.mark.parametrize("plugin", ["replaced by an upgrade", "not loaded"])
def test_apply_standby_refuses_a_standby_that_does_not_run_the_installed_plugin(
    ibqos_cli, tmp_path, monkeypatch, plugin
):
    """An OpenSM started second (B, priority 0 under A's 15) goes standby in its first sweep:
    `--standby` took the version, exit 0, whatever plugin it ran. Two cases its record cannot
    tell: the libibqos.so it loaded at its start renamed over since, as dpkg upgrades a package
    (the record names the same release: a Debian revision keeps it), and no plugin loaded at
    all (event_plugin_name set after its start, or the library not found: no record). Its
    memory map tells both. Now one line, exit 3, nothing written."""
    lib = tmp_path / "lib"
    real = installed_plugin_copy(lib)  # the map names libibqos.so.1.0.0, not the link OpenSM opened
    with sm_on_plan_a(tmp_path, ibsim="patched", ibsim_args=("-a", "8"), conf={"sm_priority": 15}) as (h, _a, _, _):
        _, path_b = make_plan_file(tmp_path, "b", 60)
        loads = plugin != "not loaded"  # else no library path to it: OpenSM runs on without
        with monkeypatch.context() as m:
            m.setenv("IBQOS_PLUGIN_DIR", str(lib))
            b = h.start_sm(
                engine="dla,minhop" if loads else "minhop",  # cfg-a's conf names dla and ibqos
                plugin=loads,
                conf_files=[tmp_path / "cfg-a" / "opensm.conf"],
                sim_host=B_NODE,
                name="smB",
                wait=False,
            )
        b.wait_for_log("Entering STANDBY state")
        if loads:
            assert b.record() is not None and b.record().plugin_version == __version__
            upgrade_plugin_copy(real)
            why = (
                f"the running OpenSM (pid {b.pid}) runs the ibqos plugin it loaded at its start from "
                f"{real}, which has been replaced since (an upgrade): restart it to load the "
                "installed plugin: "
            )
        else:
            assert b.record() is None
            why = f"the running OpenSM (pid {b.pid}) has not loaded the ibqos plugin ("
        state = b.conf.parent / "ibqos.d"
        texts = managed_texts(b)
        on_b = ("--opensm-conf", b.conf, "--pid", str(b.pid), "--sim-socket", h.sock)
        r = ibqos_cli("apply", path_b, *on_b, "--standby", env=child_env({"SIM_HOST": B_NODE}))
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 3, r.stdout + r.stderr
        assert len(lines) == 1 and lines[0].startswith(f"ibqos: error: {why}"), r.stderr
        argv = Path(f"/proc/{b.pid}/cmdline").read_bytes().rstrip(b"\0").decode().split("\0")
        assert lines[0].endswith(
            f"stop pid {b.pid} (it runs in no systemd unit) and start it again: {shlex.join(argv)}"
        )
        assert not state.exists() and managed_texts(b) == texts


@pytest.mark.parametrize("named", [True, False], ids=["pid", "reader"])
def test_status_on_a_standby_does_not_pass_the_masters_configuration_as_the_plan(ibqos_cli, tmp_path, named):
    """A failover to an SM ibqos never applied anything to: A ran plan A, applied and verified
    (v0001), then B (priority 15, its own opensm.conf, no ibqos.d) took the subnet over and
    programs it from its own files, which here give the same tables. Before, `status --live` on
    A said the master line and then judged B's tables against A's plan: exit 0, 'status: OK',
    the plan deployed, whoever ran the subnet and on whatever QoS policy. Now it is finding
    `standby`, one line naming the master and where to look, exit 1; with --pid and for the
    OpenSM found reading the file alike."""
    with sm_on_plan_a(tmp_path, ibsim="patched", ibsim_args=("-a", "8")) as (h, a, plan_a, path_a):
        r = run_apply(ibqos_cli, h, a, path_a)
        assert r.returncode == 0 and "read back: every port equals the plan" in r.stdout, r.stdout + r.stderr
        on_a = ("--opensm-conf", a.conf, *(("--pid", str(a.pid)) if named else ()), "--sim-socket", h.sock)
        r = ibqos_cli("status", "--live", *on_a, env=child_env())
        assert r.returncode == 0 and "status: OK" in r.stdout, r.stdout + r.stderr
        b, port_a, port_b = handed_over(h, a, tmp_path)
        assert b.alive() and not (b.conf.parent / "ibqos.d").exists() and programmed_equals(h, plan_a)

        r = ibqos_cli("status", "--live", "--json", *on_a, env=child_env())
        assert r.returncode == 1, r.stdout + r.stderr
        master = f"master SM: 0x{port_b.guid:016x} (lid {port_b.lid}, priority 15)"
        found = json.loads(r.stdout)["findings"]
        assert [f["kind"] for f in found] == ["standby"], found
        assert found[0]["message"] == (
            f"{master}; this OpenSM (pid {a.pid}, port 0x{port_a.guid:016x}) is not it (standby): the master "
            f"SM configures the subnet from its own files, not from {a.conf}, which is what ibqos applied "
            "and verified here; run 'ibqos status --live' on the master's host (and 'ibqos apply PLAN' "
            "there, if it runs another plan)"
        )
        r = ibqos_cli("status", "--live", *on_a, env=child_env())
        assert r.returncode == 1 and "status: OK" not in r.stdout, r.stdout + r.stderr
        assert r.stderr.strip() == "ibqos: error: status: 1 finding(s): standby", r.stderr
