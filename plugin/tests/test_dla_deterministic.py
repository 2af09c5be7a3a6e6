"""dla's routing is a function of the fabric alone: no clock in any routing decision, so a
starved SM host gets the same LFTs and SL2VL (docs/groups.md, "Budgets")."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
from ibqos.paths import REPO_ROOT
from ibqos.proc import start_daemon
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly

SRC = REPO_ROOT / "plugin" / "src"
CLOCK = re.compile(r"\b(clock_gettime|gettimeofday|clock|time|difftime|times|getrusage)\s*\(")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
GROUP_MAP = "ibqos-dla-groups"  # dla_groupmap.h: the map a sweep stores in OSM_CACHE_DIR
BUSY = 4  # busy loops on OpenSM's CPU: it gets about a fifth of it


# every line of engine.c that handles a reading of the clock or of the page-fault counter: the
# helpers, and the log lines their readings go to
ENGINE_TIMING_LINES = {
    "static double clock_ms(clockid_t clock)",
    "static long thread_faults(void)",
    "return getrusage(RUSAGE_THREAD, &ru) ? 0 : ru.ru_minflt;",
    "static struct stopwatch stopwatch_start(void)",
    "return (struct stopwatch){clock_ms(CLOCK_MONOTONIC), clock_ms(CLOCK_THREAD_CPUTIME_ID),",
    "thread_faults()};",
    "static double lap_cpu(struct stopwatch *w)",
    "double now = clock_ms(CLOCK_THREAD_CPUTIME_ID), d = now - w->cpu;",
    "struct stopwatch t0 = stopwatch_start(), lap = t0;",
    "double snap_cpu, compute_cpu;",
    "snap_cpu = lap_cpu(&lap);",
    "compute_cpu = lap_cpu(&lap);",
    "clock_ms(CLOCK_MONOTONIC) - t0.wall, clock_ms(CLOCK_THREAD_CPUTIME_ID) - t0.cpu,",
    "snap_cpu, compute_cpu, lap_cpu(&lap), thread_faults() - t0.faults);",
    "struct stopwatch t0 = stopwatch_start();",
    "clock_ms(CLOCK_MONOTONIC) - t0.wall, lap_cpu(&t0), thread_faults() - t0.faults);",
}
TIMING = re.compile(r"\b(clock_ms|getrusage|thread_faults|lap_cpu|stopwatch_start|t0|lap|snap_cpu|compute_cpu)\b")


def test_no_clock_in_routing_decisions():
    """Only engine.c reads the clock (and the page-fault counter), and only for the elapsed
    time its log lines print."""
    for path in sorted(SRC.glob("*.[ch]")):
        code = COMMENT.sub("", path.read_text()).splitlines()
        hits = [ln.strip() for ln in code if CLOCK.search(ln)]
        if path.name == "engine.c":
            assert hits == ["clock_gettime(clock, &ts);", "return getrusage(RUSAGE_THREAD, &ru) ? 0 : ru.ru_minflt;"]
            assert {ln.strip() for ln in code if TIMING.search(ln)} == ENGINE_TIMING_LINES
        else:
            assert hits == [], f"{path.name} reads the clock: {hits}"


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


@pytest.mark.fabric
def test_routing_is_byte_identical_with_the_cpu_starved(tmp_path, ibsim_fabric):
    net = dragonfly(*DRAGONFLY_SIZES[342]).write_net(tmp_path / "df342.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        calm = h.run_sm(engine="dla,minhop", plugin=True, name="calm")
        (h.run_dir / GROUP_MAP).unlink()  # the starved run discovers the groups afresh
        own = os.sched_getaffinity(0)
        cpu = max(own)
        busy = []
        try:
            for i in range(BUSY):
                busy.append(
                    start_daemon(
                        f"busy{i}",
                        ["taskset", "-c", str(cpu), sys.executable, "-c", "while True: pass"],
                        log_path=tmp_path / "busy.log",
                    )
                )
            os.sched_setaffinity(0, {cpu})  # OpenSM, started from here, shares that CPU
            try:
                starved = h.run_sm(engine="dla,minhop", plugin=True, name="starved")
            finally:
                os.sched_setaffinity(0, own)
            assert all(b.alive() for b in busy)
            assert min(_cpu_ticks(b.pid) for b in busy) > 0  # they did compete for the CPU
        finally:
            for b in busy:
                b.stop()
        print(f"df342: OpenSM {calm.wall_s:.2f} s alone, {starved.wall_s:.2f} s beside {BUSY} busy loops")
        for dump in ("opensm-lfts.dump", "opensm-sl2vl.dump"):
            assert (starved.dumps / dump).read_bytes() == (calm.dumps / dump).read_bytes(), dump
        # dla's record: every routing decision equal; only OpenSM's own sweep state (its PID,
        # and whether --once exited before its SUBNET UP event) may differ
        records = [json.loads((run.dumps / "ibqos-dla.json").read_text()) for run in (calm, starved)]
        assert records[0]["osm_pid"] != records[1]["osm_pid"]
        for r in records:
            for sweep_state in ("osm_pid", "heavy_sweeps", "subnet_up", "state"):
                del r[sweep_state]
        assert records[0] == records[1]
