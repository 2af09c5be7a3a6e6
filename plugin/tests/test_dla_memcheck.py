"""The plugin under memory checkers on the 72-CA dragonfly: an ASan/UBSan build of
libibqos.so inside the stock OpenSM, and valgrind over a heavy sweep plus a re-sweep."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import odd_fabrics
import pytest
from dla_testlib import ENGINE, refusals, require_plugin
from ibqos.proc import run_command
from ibqos_sim.harness import Harness
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly

pytestmark = pytest.mark.fabric

REPO = Path(__file__).resolve().parents[2]


def _libasan() -> str:
    cp = run_command(["gcc", "-print-file-name=libasan.so"], timeout=30)
    lib = os.path.realpath(cp.stdout.strip())
    if not os.path.exists(lib):
        pytest.fail("libasan not found (gcc -print-file-name=libasan.so)")
    return lib


class _PreloadHarness(Harness):
    """A harness whose OpenSM (and diags) run with extra libraries preloaded first."""

    preload: str = ""
    # RUF012: replaced per instance, never mutated
    extra_env: dict[str, str] = {}  # noqa: RUF012

    @property
    def env(self):
        e = super().env
        e["LD_PRELOAD"] = f"{self.preload} {e['LD_PRELOAD']}".strip()
        e.update(self.extra_env)
        return e


def test_asan_ubsan_build_runs_clean(tmp_path, monkeypatch):
    build = tmp_path / "build-asan"
    run_command(
        ["cmake", "-S", str(REPO), "-B", str(build), "-DIBQOS_SANITIZE=ON", "-DCMAKE_BUILD_TYPE=Debug"], timeout=300
    )
    run_command(["cmake", "--build", str(build), "--target", "ibqos", "-j", "2"], timeout=600)
    monkeypatch.setenv("IBQOS_BUILD_DIR", str(build))
    reports = tmp_path / "san"
    reports.mkdir()
    # OpenSM itself is not instrumented: leaks are valgrind's job, ASan checks our accesses
    # The uninstrumented MAD path trips ASan's libc interceptors on its own (umad2sim
    # over-reads in read(); libosmvendor frees a MAD that umad_send still writes). Errors
    # raised inside those libraries are suppressed; our code is instrumented, not intercepted.
    supp = tmp_path / "asan.supp"
    supp.write_text(
        "interceptor_via_lib:libumad2sim.so\ninterceptor_via_lib:libibumad.so\ninterceptor_via_lib:libosmvendor.so\n"
    )
    tables = tmp_path / "plan.tables"
    tables.write_text(
        "version 1\nsl2class 0,1,2,3,0,0,0,0,0,0,0,0,0,0,0,0\nvlarb global high 0:40,1:40 low 2:8,3:8 limit 2\n"
    )
    # the 72-CA dragonfly, and degenerate shapes (odd_fabrics.py): one switch (no global
    # link), two switches joined twice (one leaf/spine group), a ring of 8 (refused)
    nets = {"df72": dragonfly(*DRAGONFLY_SIZES[72]).write_net(tmp_path / "df72.net")}
    for name, make in (("one-switch", odd_fabrics.one_switch), ("two-switches", odd_fabrics.two_switches)):
        net, first = make()
        nets[name] = net.write(tmp_path / f"{name}.net", first)
    ring, first = odd_fabrics.ring(8)
    nets["ring-8"] = ring.write(tmp_path / "ring-8.net", first)
    for name, net in nets.items():
        h = _PreloadHarness(net, run_dir=tmp_path / f"run-{name}")
        h.preload = _libasan()
        h.extra_env = {
            "ASAN_OPTIONS": f"detect_leaks=0:suppressions={supp}:log_path={reports}/asan",
            "UBSAN_OPTIONS": f"print_stacktrace=1:halt_on_error=1:log_path={reports}/ubsan",
        }
        with h:
            run = h.run_sm(engine=ENGINE, plugin=True, plugin_options=tables, conf={"qos": "TRUE"}, check=False)
        assert run.configured_engines() == (["minhop"] if name == "ring-8" else ["dla"]), name
        assert not list(reports.iterdir()), (name, [p.read_text()[:2000] for p in reports.iterdir()])
        assert "runtime error" not in (run.log.parent / "opensm.out").read_text(), name


def _plugin_records(valgrind_log: str) -> list[str]:
    """Loss records and errors whose stack passes through libibqos."""
    records = re.split(r"\n==\d+== \n", valgrind_log)
    return [
        r
        for r in records
        if "libibqos" in r
        and (
            "definitely lost" in r
            or "indirectly lost" in r
            or "possibly lost" in r
            or "Invalid" in r
            or "uninitialised" in r
        )
    ]


def test_valgrind_heavy_sweep_and_resweep_no_plugin_leaks(tmp_path, ibsim_fabric):
    require_plugin()
    valgrind = shutil.which("valgrind") or pytest.fail("valgrind is not installed")
    topo = dragonfly(*DRAGONFLY_SIZES[72])
    victim = next(
        (a, pa)
        for a, pa, b, pb in topo.links()
        if topo.nodes[a].kind == topo.nodes[b].kind == "Switch" and topo.nodes[a].group == topo.nodes[b].group
    )
    net = topo.write_net(tmp_path / "fabric.net")
    vlog = tmp_path / "valgrind.log"
    with ibsim_fabric(net, run_dir=tmp_path / "run", console=True) as h:
        d, log, dumps, cmd, env = h._prepare_sm(
            {"engine": ENGINE, "conf": {"qos": "TRUE"}, "plugin": True}, daemon=True
        )
        # keep-debuginfo: OpenSM dlcloses the plugin before exit; without it our frames are ???
        cmd = [valgrind, "--leak-check=full", "--keep-debuginfo=yes", "--num-callers=30", f"--log-file={vlog}"] + cmd
        from ibqos.proc import start_daemon
        from ibqos_sim.harness import SmDaemon

        sm = SmDaemon(
            start_daemon("opensm", cmd, log_path=d / "opensm.out", env=env, cwd=d), log, dumps, d / "opensm.conf"
        )
        h._sms.append(sm)
        sm.wait_for_sweeps(1, timeout=300)
        # re-sweep on a changed topology: a local link down, dla routes on its stored group
        # map with detours (the degraded paths: map file read and written, VL levels)
        h.console(f'Unlink "{victim[0]}"[{victim[1]}]')
        sm.wait_for_log(r"routing on the stored group map", timeout=300)
        sm.wait_for_sweeps(2, timeout=300)
        lines = sm.lines()
        assert sum("dla tables configured" in ln.text for ln in lines) >= 2
        assert not refusals(lines)
        sm.stop()
    text = vlog.read_text()
    assert "LEAK SUMMARY" in text or "All heap blocks were freed" in text, text[-2000:]
    bad = _plugin_records(text)
    assert not bad, bad[:3]
