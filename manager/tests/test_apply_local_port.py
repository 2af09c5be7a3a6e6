"""A dual-rail SM host runs one OpenSM per port (Debian's `opensm@GUID`, `--guid %I`): every
fabric access of apply, rollback, status --live and monitor must go out of the port that
OpenSM binds, or it reads back, verifies and judges the other subnet. Before, none passed a
port (libibumad's first). Now the port (`-g/--guid`, else opensm.conf's `guid`, else OpenSM's
own pick) is mapped to (CA, port) (ibqos.fabric.local_port) and sminfo, ibqos-readback and
the SA queries are given it; a GUID that is no local port is refused before anything is
written.

libumad2sim emulates one CA (`ibsim0`, one port) per process, on the node SIM_HOST names, and
builds a fake sysfs tree in the process's working directory (`sys-<pid>/sys/class/infiniband`),
removed when it exits. So on ibsim: the mapping is checked against the tree of a running
OpenSM; the tools' argv is recorded by wrappers that exec the real tools (what really ran,
not what the code computed); and "a port of another host" is an OpenSM on another node
(SIM_HOST) whose GUID ibqos, on the first node, does not have. Two CAs on one host cannot be
made under umad2sim (docs/sm-hosts.md)."""

from __future__ import annotations

import os
import shlex
import shutil
from itertools import pairwise
from pathlib import Path
from types import SimpleNamespace

import pytest
from apply_helpers import (
    child_env,
    make_plan_file,
    managed_texts,
    opensm_restarted,
    patched_ibsim,
    run_apply,
    sm_on_plan_a,
    state_tree,
)
from ibqos import paths
from ibqos.apply.sm_role import opensm_port
from ibqos.errors import InputError
from ibqos.fabric.dla_record import own_record
from ibqos.fabric.live import read_live
from ibqos.proc import run_command

pytestmark = pytest.mark.fabric

A_NODE, B_NODE = "ca-g0-s0-h0", "ca-g1-s0-h0"  # ibsim's first CA (umad2sim's default) and another
TOOLS = ("sminfo", "ibstat")


def port_guids(h) -> dict[str, int]:
    """Port 1's GUID of each CA, by node description, as the fabric answers."""
    return {n.desc: n.ports[1].guid for n in read_live(h.env).nodes.values() if n.kind == "ca"}


def opensm_on(h, sm, cwd: Path, guid: int, sim_host: str | None = None):
    """The harness's OpenSM restarted as `opensm -g GUID -F CONF -f LOG`, as Debian's unit runs
    it (`--guid %I`), on node `sim_host`."""
    return opensm_restarted(h, sm, cwd, "-g", f"0x{guid:016x}", sim_host=sim_host)


def recording(tmp: Path) -> tuple[dict[str, str], Path]:
    """(what an ibqos child's environment adds, the log): sminfo and ibstat on PATH and ibqos-readback in
    IBQOS_BUILD_DIR are wrappers that append `NAME ARGS` to the log, then exec the real tool."""
    log, bindir, build = tmp / "argv.log", tmp / "bin", tmp / "build"
    bindir.mkdir()
    real_build = paths.build_dir()

    def wrap(path: Path, real: str) -> None:
        path.write_text(f'#!/bin/sh\necho "{path.name} $*" >> {shlex.quote(str(log))}\nexec {shlex.quote(real)} "$@"\n')
        path.chmod(0o755)

    for tool in TOOLS:
        wrap(bindir / tool, paths.require_tool(tool, "infiniband-diags"))
    for sub, wrapped in (("", "manager"), ("manager", "readback")):  # the rest of build/, linked
        (build / sub).mkdir()
        for e in (real_build / sub).iterdir():
            if e.name != wrapped:
                (build / sub / e.name).symlink_to(e)
    (build / "manager" / "readback").mkdir()
    wrap(build / "manager" / "readback" / "ibqos-readback", str(real_build / "manager" / "readback" / "ibqos-readback"))
    return {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "IBQOS_BUILD_DIR": str(build)}, log


def ran(log: Path, name: str) -> list[list[str]]:
    """The argument lists `name` ran with, in order."""
    lines = log.read_text().splitlines() if log.exists() else []
    return [ln.split()[1:] for ln in lines if ln.split()[:1] == [name]]


def out_of(args: list[str]) -> tuple[str, str] | None:
    """The (-C, -P) an argument list names, None without both."""
    opts = dict(pairwise(args))
    return (opts["-C"], opts["-P"]) if "-C" in opts and "-P" in opts else None


def test_the_port_an_opensm_binds_maps_to_the_ca_and_port_umad2sim_shows_it(tmp_path):
    """OpenSM -g B's GUID on node B: its port is what the fake sysfs of OpenSM's own process
    shows (class/infiniband/CA/ports/N/gids/0), read here as the oracle; from node A (another
    host, to umad2sim) B's GUID is refused, naming the ports there are."""
    with sm_on_plan_a(tmp_path) as (h, sm, _, _):
        guids = port_guids(h)
        with opensm_on(h, sm, tmp_path / "osm", guids[B_NODE], sim_host=B_NODE) as osm:
            tree = tmp_path / "osm" / f"sys-{osm.pid}" / "sys" / "class" / "infiniband"
            gid_files = sorted(tree.glob("*/ports/*/gids/0"))
            assert len(gid_files) == 1, list(tree.rglob("*"))[:20]
            ca, port = gid_files[0].parts[-5], int(gid_files[0].parts[-3])
            guid = int(gid_files[0].read_text().strip().replace(":", "")[16:], 16)
            assert guid == guids[B_NODE]

            on_b = dict(h.env, SIM_HOST=B_NODE)
            got = opensm_port(osm.pid, {}, on_b)  # from its -g
            assert (got.ca, got.port, got.guid) == (ca, port, guid)
            got = opensm_port(None, {"guid": f"0x{guid:x}"}, on_b)  # a stopped one: its opensm.conf
            assert (got.ca, got.port, got.guid) == (ca, port, guid)
            got = opensm_port(None, {}, on_b)  # told none: the first port that is not down
            assert (got.ca, got.port, got.guid) == (ca, port, guid)

            with pytest.raises(InputError) as e:
                opensm_port(osm.pid, {}, h.env)
            assert str(e.value) == (
                f"OpenSM (pid {osm.pid}) -g/--guid: 0x{guid:016x} is not a port of this host (its ports: "
                f"0x{guids[A_NODE]:016x} ({ca} port {port})): the OpenSM cannot bind it, and ibqos would "
                "read another subnet"
            )


def test_apply_rollback_status_and_monitor_go_out_of_the_opensms_port(ibqos_cli, tmp_path):
    """OpenSM -g A's GUID: every sminfo and ibqos-readback that apply, status --live, rollback
    and monitor ran (as recorded by the wrappers) names -C ibsim0 -P 1."""
    with sm_on_plan_a(tmp_path, **patched_ibsim()) as (h, sm, _, _):
        _, path_b = make_plan_file(tmp_path, "b", 60)
        with opensm_on(h, sm, tmp_path / "osm", port_guids(h)[A_NODE]) as osm:
            extra, log = recording(tmp_path)
            env = child_env(extra)
            target = ("--opensm-conf", sm.conf, "--pid", str(osm.pid), "--sim-socket", h.sock)
            for args in (
                ("apply", path_b, *target),
                ("status", "--live", *target),
                ("rollback", "v0000", *target),
            ):
                before = len(ran(log, "sminfo")), len(ran(log, "ibqos-readback"))
                r = ibqos_cli(*args, env=env)
                assert r.returncode in (0, 1), r.stdout + r.stderr
                assert len(ran(log, "sminfo")) > before[0], (args, log.read_text())
                assert len(ran(log, "ibqos-readback")) > before[1], (args, log.read_text())
            readbacks = len(ran(log, "ibqos-readback"))
            cmd = [*ibqos_cli.argv, "monitor", "--opensm-conf", str(sm.conf), "--sim-socket", h.sock]
            r = run_command(
                [*cmd, "--plan", path_b, "--once", "--interval", "0.5", "--json"], env=env, timeout=120, check=False
            )
            assert r.returncode in (0, 1), r.stdout + r.stderr
            assert [a for a in ran(log, "ibqos-readback")[readbacks:] if "-T" in a], log.read_text()
            for name in ("sminfo", "ibqos-readback"):
                assert {out_of(a) for a in ran(log, name)} == {("ibsim0", "1")}, log.read_text()


def test_the_recovery_of_a_killed_apply_goes_out_of_the_opensms_port(ibqos_cli, tmp_path):
    """An apply killed after the swap, finished by `status --opensm-conf` without --pid (the
    journal's PID, its -g): the recovery's sminfo and read-back name -C ibsim0 -P 1."""
    with sm_on_plan_a(tmp_path) as (h, sm, _, _):
        _, path_b = make_plan_file(tmp_path, "b", 60)
        with opensm_on(h, sm, tmp_path / "osm", port_guids(h)[A_NODE]) as osm:
            extra, log = recording(tmp_path)
            target = SimpleNamespace(conf=sm.conf, pid=osm.pid)
            assert run_apply(ibqos_cli, h, target, path_b, fault="journal:swapped", env=extra).returncode == -9
            done = len(log.read_text().splitlines())
            r = ibqos_cli("status", "--opensm-conf", sm.conf, "--sim-socket", h.sock, env=child_env(extra))
            assert r.returncode == 0 and "recovered: " in r.stdout, r.stdout + r.stderr
            lines = log.read_text().splitlines()[done:]
            recovery = [ln.split() for ln in lines if ln.split()[0] in ("sminfo", "ibqos-readback")]
            assert {ln[0] for ln in recovery} == {"sminfo", "ibqos-readback"}, lines
            assert {out_of(ln[1:]) for ln in recovery} == {("ibsim0", "1")}, lines


def test_an_opensm_whose_port_is_not_local_is_refused_before_anything_is_written(ibqos_cli, tmp_path):
    """OpenSM -g B's GUID on node B; ibqos on node A (umad2sim's default), where that GUID is no
    port: apply, status --live and monitor say so in one line, exit 2, and apply wrote nothing,
    signalled nothing and ran no diag nor read-back."""
    with sm_on_plan_a(tmp_path) as (h, sm, _, _):
        _, path_b = make_plan_file(tmp_path, "b", 60)
        guids = port_guids(h)
        with opensm_on(h, sm, tmp_path / "osm", guids[B_NODE], sim_host=B_NODE) as osm:
            extra, log = recording(tmp_path)
            env = child_env(extra)
            state = sm.conf.parent / "ibqos.d"
            assert not state.exists()  # never applied: the refusal must not even take the lock
            before, texts = state_tree(state), managed_texts(sm)
            sweeps = own_record(sm.dumps, osm.pid).heavy_sweeps
            target = ("--opensm-conf", sm.conf, "--pid", str(osm.pid), "--sim-socket", h.sock)
            refusal = (
                f"ibqos: error: OpenSM (pid {osm.pid}) -g/--guid: 0x{guids[B_NODE]:016x} is not a port of this "
                f"host (its ports: 0x{guids[A_NODE]:016x} (ibsim0 port 1)): the OpenSM cannot bind it, and "
                "ibqos would read another subnet"
            )
            for args in (("apply", path_b, *target), ("status", "--live", *target)):
                r = ibqos_cli(*args, env=env)
                assert r.returncode == 2, r.stdout + r.stderr
                assert r.stderr.strip().splitlines() == [refusal], r.stderr
            cmd = [
                *ibqos_cli.argv,
                "monitor",
                "--opensm-conf",
                str(sm.conf),
                "--sim-socket",
                h.sock,
                "--once",
                "--plan",
                str(path_b),
            ]
            r = run_command(cmd, env=env, timeout=120, check=False)
            assert r.returncode == 2, r.stdout + r.stderr
            assert r.stderr.strip().splitlines() == [refusal], r.stderr
            assert not state.exists() and state_tree(state) == before and managed_texts(sm) == texts
            assert own_record(sm.dumps, osm.pid).heavy_sweeps == sweeps  # no SIGHUP: no sweep since
            assert ran(log, "sminfo") == [] and ran(log, "ibqos-readback") == []
            assert shutil.which("ibstat", path=env["PATH"]).startswith(str(tmp_path))
            assert ran(log, "ibstat")  # the mapping ran, through the wrapper
