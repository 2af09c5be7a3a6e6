"""`apply` learns that its sweep ended from the ibqos plugin's record (OpenSM's PID and sweep
counters, written at HEAVY_SWEEP_START and SUBNET_UP), never from the log: it works while
OpenSM's `log_max_size` truncates the log under it, and beside another event plugin."""

from __future__ import annotations

import subprocess

import pytest
from apply_helpers import apply_cmd, child_env, make_plan_file, managed_texts, programmed_equals, sm_on_plan_a
from ibqos import osmconf
from ibqos.osmlog import log_mark, read_since, sweep_failures
from ibqos.render import render_plan
from ibqos_sim.harness import Harness
from ibqos_sim.harness.topology import dragonfly
from tree_snapshot import changes, snapshot

TRUNCATED = "exceeds the limit"  # OpenSM's stderr line as it truncates (osm_log.c)


def _truncations(sm) -> int:
    return (sm.log.parent / "opensm.out").read_text(errors="replace").count(TRUNCATED)


@pytest.mark.fabric
def test_apply_works_with_the_log_truncated_under_it(ibqos_cli, tmp_path):
    plan_b, path_b = make_plan_file(tmp_path, "b", 25)
    # log_max_size is in MB, 1 the smallest limit (0: none); every log level makes a heavy
    # sweep log several MB, so OpenSM truncates the log several times in each
    with sm_on_plan_a(tmp_path, conf={"log_max_size": 1}, log_flags=0xFF, wait=False) as (h, sm, _, _):
        sm.wait_for_record_sweeps(1)
        before, cut = sm.record(), _truncations(sm)
        r = subprocess.run(
            apply_cmd(ibqos_cli, h, sm, path_b), capture_output=True, text=True, timeout=300, env=child_env()
        )
        assert r.returncode == 0, r.stdout + r.stderr
        assert "read back: every port equals the plan" in r.stdout
        assert _truncations(sm) > cut, "OpenSM did not truncate its log during the apply"
        after = sm.record()
        assert after.osm_pid == sm.pid and after.heavy_sweeps > before.heavy_sweeps
        assert after.engine.status == "routed" and after.table_file.status == "applied"
        assert programmed_equals(h, plan_b)
        assert sm.alive()


@pytest.mark.fabric
def test_apply_accepts_the_plugin_beside_another_event_plugin(ibqos_cli, tmp_path):
    """OpenSM loads every plugin event_plugin_name names, space separated. osmeventplugin,
    OpenSM's sample plugin, is not in Debian's package: OpenSM logs that it cannot load it
    (ERR 1000) and runs with ibqos, as on a host where the second plugin is missing."""
    plan_b, path_b = make_plan_file(tmp_path, "b", 25)

    def two_plugins(text: str) -> str:
        return text.replace("event_plugin_name ibqos\n", "event_plugin_name ibqos osmeventplugin\n")

    with sm_on_plan_a(tmp_path, conf_edit=two_plugins) as (h, sm, _, _):
        assert osmconf.parse(sm.conf.read_text())["event_plugin_name"] == "ibqos osmeventplugin"
        assert sm.record() is not None  # ibqos loaded
        assert "cannot load plugin 'osmeventplugin'" in sm.log.read_text()
        r = subprocess.run(
            apply_cmd(ibqos_cli, h, sm, path_b), capture_output=True, text=True, timeout=300, env=child_env()
        )
        assert r.returncode == 0, r.stdout + r.stderr
        assert osmconf.parse(managed_texts(sm)[0])["event_plugin_name"] == "ibqos osmeventplugin"  # as it was
        assert programmed_equals(h, plan_b)


def test_apply_without_the_plugin_says_how_to_load_it(tmp_path):
    from ibqos.errors import ExternalError
    from ibqos_app.apply.run import Apply, ApplyRequest

    _, path_b = make_plan_file(tmp_path, "b", 25)
    conf = tmp_path / "opensm.conf"
    conf.write_text("routing_engine dla,dfsssp,lash\nevent_plugin_name osmeventplugin\n")
    a = Apply(ApplyRequest(path_b, conf, pid=1))
    with pytest.raises(ExternalError, match=r"event_plugin_name is 'osmeventplugin', without 'ibqos'"):
        a.stage_render()


def test_a_truncated_log_is_read_from_its_start(tmp_path):
    log = tmp_path / "osm.log"
    log.write_text("Nov 24 10:00:00 000001 [1] 0x02 -> old sweep\n" * 50)
    mark = log_mark(log)
    with open(log, "a") as f:
        f.write("Nov 24 10:00:01 000001 [1] 0x01 -> ERR 4A05: after the mark\n")
    assert read_since(mark) == (b"Nov 24 10:00:01 000001 [1] 0x01 -> ERR 4A05: after the mark\n", False)
    # OpenSM truncates in place (ftruncate, rewind) and writes on: shorter than the mark ...
    log.write_text("Nov 24 10:00:02 000002 [1] 0x01 -> ERR 4A06: after the truncation\n")
    assert sweep_failures(mark) == (["Nov 24 10:00:02 000002 [1] 0x01 -> ERR 4A06: after the truncation"], True)
    # ... or longer again by the time it is read: the first line tells
    log.write_text("Nov 24 10:00:03 000003 [1] 0x01 -> ERR 4A07: new log\n" * 60)
    data, truncated = read_since(mark)
    assert truncated and data.startswith(b"Nov 24 10:00:03")


@pytest.mark.fabric
def test_an_opensm_started_before_the_plugin_was_set_is_refused_before_the_swap(ibqos_cli, tmp_path):
    """The admin adds `event_plugin_name ibqos` to opensm.conf but does not restart OpenSM:
    the running process never writes the plugin's record, so no sweep could be seen to end.
    (A STANDBY SM writes none either.) apply says so at once and changes nothing, instead of
    waiting out --timeout for the sweep and again for its rollback's (it waits --timeout once,
    before the swap, for an OpenSM still in its first sweep)."""
    plan_a, _ = make_plan_file(tmp_path, "a", 40)
    _, path_b = make_plan_file(tmp_path, "b", 25)
    files = render_plan(plan_a, tmp_path / "cfg-a")
    net = dragonfly(3, 1, 1).write_net(tmp_path / "fabric.net")
    with Harness(net, run_dir=tmp_path / "run", ibsim="debian") as h:
        sm = h.start_sm(engine="minhop", plugin=False)
        edits = osmconf.parse(files["opensm.conf"].read_text())
        keep = ("routing_engine", "event_plugin_name", "event_plugin_options", "qos_policy_file")
        sm.conf.write_text(osmconf.merge(sm.conf.read_text(), {k: edits[k] for k in keep}, "the admin, no restart"))
        theirs = ("osm.log", "dumps", "opensm.out", ".")  # OpenSM's; a refused apply makes nothing
        before = snapshot(sm.conf.parent, skip=theirs)
        cp = ibqos_cli(*apply_cmd(ibqos_cli, h, sm, path_b, "--timeout", "3")[1:], env=child_env())
        assert cp.returncode == 3, cp.stdout + cp.stderr
        assert "has written no ibqos plugin record" in cp.stderr and "restart it once" in cp.stderr
        assert "→" not in cp.stdout  # no swap, no rollback
        assert changes(before, snapshot(sm.conf.parent, skip=theirs)) == []
        assert sm.alive()
