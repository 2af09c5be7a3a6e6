"""Shared by the apply tests: plans that differ in one share, a daemon OpenSM running plan A
on a 12-CA dragonfly in ibsim, and `ibqos apply` / `ibqos status` run as the admin runs them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from ibqos import paths
from ibqos.conformance import diff_programmed, expected_from_plan
from ibqos.fabric.dla_record import own_record
from ibqos.paths import REPO_ROOT
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from ibqos.proc import Daemon, run_command, start_daemon, wait_until
from ibqos.render import render_plan
from ibqos_sim.harness import Harness
from ibqos_sim.harness.ibsim_binary import patched_unavailable
from ibqos_sim.harness.topology import dragonfly
from prometheus_client.parser import text_string_to_metric_families

APPLY_FAULT = Path(__file__).with_name("apply_fault.py")


def policy_file(tmp: Path, name: str, share: int, cap: int = 8) -> Path:
    text = (REPO_ROOT / "examples" / "two-class.yaml").read_text()
    text = text.replace("bandwidth: 40", f"bandwidth: {share}").replace(
        "vlarb_cap: {high: 8, low: 8}", f"vlarb_cap: {{high: {cap}, low: {cap}}}"
    )
    p = tmp / f"{name}.yaml"
    p.write_text(text)
    return p


def make_plan_file(tmp: Path, name: str, share: int, cap: int = 8):
    plan = make_plan(load_policy(policy_file(tmp, name, share, cap)))
    path = tmp / f"{name}.plan.json"
    plan.save(path)
    return plan, path


@contextmanager
def sm_on_plan_a(
    tmp_path: Path,
    conf_edit=lambda text: text,
    ibsim: str = "debian",
    console: bool = False,
    ibsim_args: tuple[str, ...] = (),
    net_edit=lambda text: text,
    **start,
):
    """OpenSM with the dla plugin running plan A as a daemon on a 12-CA dragonfly: (harness,
    SmDaemon, plan A, its file). `conf_edit` changes the rendered opensm.conf OpenSM starts
    on, `net_edit` the fabric's net file, `start` goes to Harness.start_sm (e.g.
    conf={"partition_config_file": ...}). Debian's
    ibsim explicitly: the rollback tests need its 8-entry ports, which refuse a 16-entry plan
    (the patched ibsim's 64-entry ports take it); `ibsim`, `console`, `ibsim_args` for Harness
    otherwise."""
    plan_a, path_a = make_plan_file(tmp_path, "a", 40)
    files = render_plan(plan_a, tmp_path / "cfg-a")
    conf = files["opensm.conf"]
    conf.write_text(conf_edit(conf.read_text()))
    net = dragonfly(3, 1, 1).write_net(tmp_path / "fabric.net")
    net.write_text(net_edit(net.read_text()))
    with Harness(net, run_dir=tmp_path / "run", ibsim=ibsim, console=console, ibsim_args=ibsim_args) as h:
        yield h, h.start_sm(engine="dla,minhop", plugin=True, conf_files=[conf], **start), plan_a, path_a


@contextmanager
def _plan_a_read_back(tmp_path: Path, **options):
    with sm_on_plan_a(tmp_path, **options) as (h, sm, plan_a, path_a):
        assert programmed_equals(h, plan_a)
        yield h, sm, plan_a, path_a


@pytest.fixture
def live_sm(tmp_path):
    with _plan_a_read_back(tmp_path) as running:
        yield running


def patched_ibsim() -> dict:
    """Harness options for the patched ibsim at Debian's 8-entry capacity (`-a 8`) when built,
    else Debian's (docs/ibsim.md). Tests that kill apply mid-read (test_signals) need it: it
    refuses a umad2sim client killed while it connects (patch 0005), where Debian's exits 255
    and takes the fabric with it, a rare failure on a loaded machine. Tests that run `ibqos
    monitor` for what it says besides the shares (the OpenSM it follows, the plugin's release,
    the port it reads from) take it for its PMA: it answers PortXmitDataSL/PortRcvDataSL (patch
    0003), which Debian's forwards to no client, so there each read of a port's counters waited
    out the reader's MAD timeouts and retries (a 12-CA fabric: 35 s per `monitor --once`)."""
    if patched_unavailable() is None:
        return {"ibsim": "patched", "ibsim_args": ("-a", "8")}
    return {}


@pytest.fixture
def live_sm_patched(tmp_path):
    """live_sm on patched_ibsim()'s ibsim."""
    with _plan_a_read_back(tmp_path, **patched_ibsim()) as running:
        yield running


@contextmanager
def opensm_restarted(
    h, sm, cwd: Path, *args: str, sim_host: str | None = None, dumps: Path | None = None, log: bool = True
) -> Iterator[Daemon]:
    """The harness's OpenSM restarted as `opensm ARGS -F CONF -f LOG` in `cwd` (e.g. `-g GUID`,
    as Debian's unit runs it), on node `sim_host`; stopped by PID at the end. `dumps`: where
    its record is written when ARGS move it (--dump_files_dir), else the harness's. Without
    `log`, no -f: it logs to the file's log_file."""
    sm.stop()
    cwd.mkdir()
    env = dict(h.env, LD_LIBRARY_PATH=str(paths.plugin_dir()))
    if sim_host:
        env["SIM_HOST"] = sim_host
    argv = [paths.require_tool("opensm", "opensm"), *args, "-F", str(sm.conf)]
    if log:
        argv += ["-f", str(cwd / "opensm.log")]
    osm = start_daemon("opensm", argv, log_path=cwd / "out", env=env, cwd=cwd)
    try:
        wait_until(lambda: own_record(dumps or sm.dumps, osm.pid) is not None, timeout=120)
        yield osm
    finally:
        osm.stop()


@contextmanager
def paused_apply(tmp: Path, point: str, args) -> Iterator[Callable[[], tuple[int, str, list[str]]]]:
    """`ibqos ARGS` paused at POINT (apply_fault.py's pause@POINT) while the test changes the
    host or the fabric: yields resume(), which lets it go on and returns (exit code, stdout,
    stderr lines). Killed by PID at the end if it still runs."""
    pause = tmp / "pause"
    pause.mkdir()
    cmd = [sys.executable, str(APPLY_FAULT), f"pause@{point}", *map(str, args)]
    out_path, err_path = tmp / "apply.out", tmp / "apply.err"
    with out_path.open("w") as out, err_path.open("w") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, env=child_env({"APPLY_FAULT_PAUSE": str(pause)}))
    try:
        wait_until(lambda: (pause / "paused").exists() or p.poll() is not None, timeout=120)
        assert p.poll() is None, err_path.read_text()

        def resume() -> tuple[int, str, list[str]]:
            (pause / "go").touch()
            rc = p.wait(timeout=300)
            return rc, out_path.read_text(), err_path.read_text().strip().splitlines()

        yield resume
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def apply_cmd(ibqos_cli, h, sm, plan_path, *extra) -> list[str]:
    """`ibqos apply` on this fabric's OpenSM, as an argv (for Popen); ibqos_cli: conftest's."""
    return [*ibqos_cli.argv, *apply_args(h, sm, plan_path, *extra)]


def apply_args(h, sm, plan_path, *extra) -> list[str]:
    return [
        "apply",
        str(plan_path),
        "--opensm-conf",
        str(sm.conf),
        "--pid",
        str(sm.pid),
        "--sim-socket",
        h.sock,
        *extra,
    ]


TERMINAL_EXEC = Path(__file__).with_name("terminal_exec.py")


def as_from_a_terminal(cmd: list[str], nohup: bool = False) -> list[str]:
    """`cmd` started with a terminal's signal dispositions (terminal_exec.py): for tests that
    signal ibqos."""
    return [sys.executable, str(TERMINAL_EXEC), *(["--nohup"] if nohup else []), *cmd]


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    return dict(os.environ, PYTHONUNBUFFERED="1", **(extra or {}))  # lines reach a pipe as printed


def run_apply(ibqos_cli, h, sm, plan_path, *extra, fault=None, env=None):
    """`ibqos apply`; with `fault` (a step, or journal:<state>) the apply process SIGKILLs
    itself there (apply_fault.py) and returns -9."""
    args = apply_args(h, sm, plan_path, *extra)
    if fault:
        cmd = [sys.executable, str(APPLY_FAULT), fault, *args]
        return run_command(cmd, env=child_env(env), timeout=300, check=False)
    return ibqos_cli(*args, env=child_env(env))


def run_status(ibqos_cli, h, sm, *extra):
    return ibqos_cli("status", "--opensm-conf", sm.conf, "--sim-socket", h.sock, *extra, env=child_env())


def monitor_once(ibqos_cli, h, sm, plan: Path, prom: Path, kind: str, metric: str) -> tuple[int, list[str], dict]:
    """`ibqos monitor --opensm-conf` for one interval: its exit code, the messages of its
    findings of `kind`, and `metric`'s samples in its textfile by their sorted labels."""
    r = ibqos_cli(
        "monitor", "--plan", plan, "--opensm-conf", sm.conf, "--sim-socket", h.sock, "--once", "--json",
        "--interval", "0.3", "--textfile", prom, env=child_env(),
    )  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    found = [f["message"] for f in json.loads(r.stdout)["findings"] if f["kind"] == kind]
    gauge = {
        tuple(sorted(s.labels.items())): s.value
        for fam in text_string_to_metric_families(prom.read_text())
        for s in fam.samples
        if s.name == metric
    }
    return r.returncode, found, gauge


def run_rollback(ibqos_cli, h, sm, *extra, env=None):
    target = ("--opensm-conf", str(sm.conf), "--pid", str(sm.pid), "--sim-socket", h.sock)
    return ibqos_cli("rollback", *extra, *target, env=child_env(env))


def managed_texts(sm) -> tuple[str, ...]:
    from ibqos.osmconf import parse

    opts = parse(sm.conf.read_text())
    return (
        sm.conf.read_text(),
        Path(opts["qos_policy_file"]).read_text(),
        Path(opts["event_plugin_options"]).read_text(),
    )


def state_tree(state: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ibqos.d/ (the lock file's PID aside) with its bytes and mtime, and
    where each link points."""
    out: dict[str, tuple[bytes, int]] = {}
    for p in sorted(state.rglob("*")):
        if p.name == "apply.lock":
            continue
        if p.is_symlink():
            out[str(p)] = (str(p.readlink()).encode(), 0)
        elif p.is_file():
            out[str(p)] = (p.read_bytes(), p.stat().st_mtime_ns)
    return out


def switch_link(fabric) -> tuple[str, int]:
    """(switch description, port) of a switch-to-switch link of `fabric`, to Unlink in ibsim."""
    sw = next(
        n
        for n in fabric.switches()
        if any(fabric.nodes[p.remote[0]].kind == "switch" for p in n.ports.values() if p.remote)
    )
    return sw.desc, next(p.num for p in sw.ports.values() if p.remote and fabric.nodes[p.remote[0]].kind == "switch")


def programmed_equals(h, plan) -> bool:
    # through the harness: a dead ibsim's error says how it ended (exit status, ibpanic line)
    return diff_programmed(h.read_back(save=False), expected_from_plan(plan)) == []


def installed_plugin_copy(lib: Path) -> Path:
    """The built plugin in `lib` as `make install` and the .deb lay it out (libibqos.so ->
    libibqos.so.1 -> libibqos.so.1.0.0, what OpenSM's memory map then names); the real file."""
    lib.mkdir(parents=True, exist_ok=True)
    built = paths.plugin_dir()
    real = (built / "libibqos.so").resolve()
    for name in ("libibqos.so", "libibqos.so.1"):
        (lib / name).symlink_to(os.readlink(built / name))
    shutil.copy2(real, lib / real.name)
    return lib / real.name


def upgrade_plugin_copy(real: Path) -> None:
    """What dpkg does to the plugin in an upgrade: a new file renamed over the installed one."""
    new = real.with_name(real.name + ".dpkg-new")
    shutil.copy2(real, new)
    new.rename(real)
