"""The harness on real ibsim + OpenSM: discovery, isolation, clean shutdown, errors."""

from __future__ import annotations

import inspect
import os
import signal
import threading

import pytest
from ibqos.errors import InputError
from ibqos.fabric.dla_record import RECORD_FILE, RECORD_TEMP
from ibqos.proc import ProcessError, wait_until
from ibqos_sim.harness.fabric import ONCE_SWEEP_INTERVAL_S, Harness, SmOptions
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly

pytestmark = pytest.mark.fabric


def _subnet_counts(dumps):
    cas, sws = set(), set()
    for line in (dumps / "opensm-subnet.lst").read_text().splitlines():
        # each line is one link, "{ TYPE Ports:.. NodeGUID:X ...} { ... }": count left ends
        left = line.split("}")[0]
        guid = left.split("NodeGUID:")[1].split()[0]
        (sws if left.startswith("{ SW") else cas).add(guid)
    return len(cas), len(sws)


@pytest.mark.parametrize("size", [42, 72, 342, 1056])
def test_generated_dragonfly_fully_discovered(tmp_path, size, ibsim_fabric):
    topo = dragonfly(*DRAGONFLY_SIZES[size])
    net = topo.write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        run = h.run_sm(engine="minhop")
    assert run.rc == 0
    assert _subnet_counts(run.dumps) == (len(topo.cas), len(topo.switches))
    assert len(topo.cas) == size


def test_two_fabrics_concurrently_do_not_interfere(tmp_path, ibsim_fabric):
    small, big = dragonfly(3, 2, 3, 7), dragonfly(4, 2, 2)
    n1 = small.write_net(tmp_path / "a.net")
    n2 = big.write_net(tmp_path / "b.net")
    results = {}

    def one(key, net):
        with ibsim_fabric(net, run_dir=tmp_path / key) as h:
            results[key] = _subnet_counts(h.run_sm(engine="minhop").dumps)

    threads = [threading.Thread(target=one, args=("a", n1)), threading.Thread(target=one, args=("b", n2))]
    with ibsim_fabric(n1, run_dir=tmp_path / "c") as h1, ibsim_fabric(n2, run_dir=tmp_path / "d") as h2:
        assert h1.sock != h2.sock
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # while four fabrics ran, each client still saw its own fabric
        assert _subnet_counts(h1.run_sm().dumps) == (42, 21)
        assert _subnet_counts(h2.run_sm().dumps) == (72, 36)
    assert results == {"a": (42, 21), "b": (72, 36)}


def test_every_process_stopped_on_failure(tmp_path, ibsim_fabric):
    net = dragonfly(4, 2, 2).write_net(tmp_path / "f.net")
    pids = []
    with pytest.raises(RuntimeError), ibsim_fabric(net, run_dir=tmp_path / "r") as h:
        sm = h.start_sm(engine="minhop")
        pids += [h.ibsim.pid, sm.pid]
        raise RuntimeError("test body failed")
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_an_opensm_stopped_while_the_plugin_writes_its_record_leaves_no_temp_file(tmp_path, ibsim_fabric):
    """A clean clone's CI once failed test_signals' 'no half file' on dumps/ibqos-dla.json.tmp: the
    dry run's OpenSM was stopped between the plugin's write of its record and the rename. That
    state is made here by hand (the plugin's own window is microseconds wide); stopping the SM
    leaves the dumps with the record and no temp file."""
    net = dragonfly(2, 2, 1, 3).write_net(tmp_path / "f.net")
    with ibsim_fabric(net, run_dir=tmp_path / "r") as h:
        sm = h.start_sm(engine="dla,minhop", plugin=True)
        assert sm.record() is not None
        (sm.dumps / RECORD_TEMP).write_text('{"schema": "ibqos.dla-record/2", "osm_pid": ')
        sm.stop()
        assert not sm.alive()
        assert sorted(p.name for p in sm.dumps.glob("ibqos-dla*")) == [RECORD_FILE]


def test_daemon_sm_and_console(tmp_path, ibsim_fabric):
    net = dragonfly(4, 2, 2).write_net(tmp_path / "f.net")
    with ibsim_fabric(net, run_dir=tmp_path / "r", console=True) as h:
        sm = h.start_sm(engine="minhop")
        n = sm.sweeps()
        h.console('Unlink "sw-g0-s0"[6]')
        sm.wait_for_sweeps(n + 1, timeout=60)
        assert sm.alive()
        os.kill(sm.pid, signal.SIGTERM)


def test_unknown_engine_is_one_clear_error(tmp_path, ibsim_fabric):
    net = dragonfly(4, 2, 2).write_net(tmp_path / "f.net")
    with ibsim_fabric(net, run_dir=tmp_path / "r") as h:
        # OpenSM itself would silently route with minhop; the harness refuses the typo.
        with pytest.raises(InputError, match="unknown routing engine 'minhopp'"):
            h.run_sm(engine="minhop,minhopp")
        with pytest.raises(InputError, match="needs the ibqos plugin"):
            h.run_sm(engine="dla,minhop", plugin=False)
        assert h.run_sm(engine="updn").configured_engines() == ["minhop"]  # updn finds no roots


def test_bad_net_file(tmp_path, ibsim_fabric):
    bad = tmp_path / "bad.net"
    bad.write_text("this is not a net file\n")
    # read when the fabric starts (a running fabric's net file may be gone by `fabric down`)
    with pytest.raises(InputError, match=r"bad\.net.*not an ibsim net file"), ibsim_fabric(bad, run_dir=tmp_path / "r"):
        pass


def test_ibsim_refusing_the_net_file_is_bad_input_naming_it(tmp_path, ibsim_fabric):
    """ibsim's own refusal (here a link to an undefined node, which only ibsim checks when the
    harness is used directly) is the file's fault: InputError (exit 2), not a tool failure."""
    bad = tmp_path / "dangling.net"
    bad.write_text('Switch 4 "s"\n[1] "nowhere"[1]\n')
    with (
        pytest.raises(InputError, match=f"{bad}: ibsim cannot"),
        ibsim_fabric(bad, run_dir=tmp_path / "r", ready_timeout=10),
    ):
        pass


def test_run_sm_and_start_sm_take_one_options_type(tmp_path, ibsim_fabric):
    """The OpenSM options a run may set are one type, SmOptions, that both starters take as
    keywords beside their own (run_sm: timeout, check; start_sm: wait, timeout), so they cannot
    drift apart; the same options give the same opensm.conf but for the daemon's sweep
    interval, and a misspelt one is refused by both before any OpenSM starts. Before, each
    repeated the option list in its signature (duplicates D4)."""
    own = {"run_sm": ["timeout", "check"], "start_sm": ["wait", "timeout"]}
    for name, params in own.items():
        sig = inspect.signature(getattr(Harness, name))
        assert [p for p in sig.parameters if p != "self"] == [*params, "opts"], (name, sig)
        assert sig.parameters["opts"].annotation == "Unpack[SmOptions]", (name, sig)
    assert set(SmOptions.__optional_keys__) == {
        "engine", "conf", "conf_files", "plugin", "plugin_options", "name", "log_flags", "sim_host", "preload"
    }  # fmt: skip
    frag = tmp_path / "frag.conf"
    frag.write_text("# a fragment\nlmc 0\n")
    net = dragonfly(4, 2, 2).write_net(tmp_path / "f.net")
    opts: SmOptions = {"engine": "updn,minhop", "conf": {"qos": "TRUE"}, "conf_files": [frag], "log_flags": 0x03}
    with ibsim_fabric(net, run_dir=tmp_path / "r") as h:
        once = h.run_sm(name="once", **opts)
        sm = h.start_sm(name="daemon", **opts)
        confs = [r.conf.read_text().replace(str(r.conf.parent), "RUN") for r in (once, sm)]
        assert confs[0].replace(f"sweep_interval {ONCE_SWEEP_INTERVAL_S}", "sweep_interval 2") == confs[1]
        assert "routing_engine updn,minhop" in confs[0] and "lmc 0" in confs[0] and "qos TRUE" in confs[0]
        sm.stop()
        for start in (h.run_sm, h.start_sm):
            with pytest.raises(TypeError, match=r"unknown OpenSM run option.*plugins"):
                start(engine="minhop", plugins=True)  # type: ignore[call-arg]
        assert sorted(p.name for p in (tmp_path / "r").iterdir() if p.is_dir()) == ["daemon", "once"]


def _heavy_sweep_running(sm) -> bool:
    text = sm.log.read_bytes()
    return b"INITIATING HEAVY SWEEP" in text[text.rfind(b"SUBNET UP") :]


def test_a_running_opensms_dumps_are_read_between_sweeps_only(tmp_path, ibsim_fabric):
    """OpenSM rewrites its dumps in place, file after file, at the end of every heavy sweep. A
    clean clone's CI read one dump of a sweep and another of the next (test_dla_fault_kinds: a
    recabled CA in the SL2VL dump and not in the subnet list). Here OpenSM is frozen inside a
    heavy sweep: its dumps must not be read until that sweep has ended, and then show it."""
    net = dragonfly(4, 2, 2).write_net(tmp_path / "f.net")
    with ibsim_fabric(net, run_dir=tmp_path / "r", console=True) as h:
        sm = h.start_sm(engine="minhop", conf={"sweep_interval": 1})
        sm.wait_settled()
        cas = len(list(sm.load_dumps(require_sl2vl=False).cas()))
        h.console('Unlink "ca-g1-s0-h0"[1]')
        wait_until(lambda: _heavy_sweep_running(sm), timeout=60, interval=0.005, what="the unlink's heavy sweep")
        os.kill(sm.pid, signal.SIGSTOP)
        try:
            assert _heavy_sweep_running(sm), "the sweep ended before OpenSM was stopped"
            with pytest.raises(ProcessError, match="dumps between two sweeps"):
                sm.load_dumps(require_sl2vl=False, timeout=1)
        finally:
            os.kill(sm.pid, signal.SIGCONT)
        assert len(list(sm.load_dumps(require_sl2vl=False).cas())) == cas - 1


def test_an_opensm_run_killed_while_the_plugin_writes_its_record_leaves_no_temp_file(tmp_path, ibsim_fabric):
    """test_signals once found dumps/ibqos-dla.json.tmp after a dry run stopped by SIGTERM: its
    `opensm --once` was killed between the plugin's write of its record and the rename. The
    temp file is planted by hand (the plugin's window is microseconds wide) and the run killed
    by its timeout, as an interrupted ibqos kills it."""
    net = dragonfly(4, 2, 2).write_net(tmp_path / "f.net")
    with ibsim_fabric(net, run_dir=tmp_path / "r") as h:
        dumps = tmp_path / "r" / "once" / "dumps"
        dumps.mkdir(parents=True)
        (dumps / RECORD_TEMP).write_text('{"schema": "ibqos.dla-record/2", "osm_pid": ')
        with pytest.raises(ProcessError, match="timed out"):
            h.run_sm(engine="dla,minhop", plugin=True, name="once", timeout=0.01)
        assert not (dumps / RECORD_TEMP).exists()
