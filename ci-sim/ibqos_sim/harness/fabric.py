"""ibsim + OpenSM harness: one simulated fabric, real OpenSM on it, everything stopped by PID.

    with Harness(net, run_dir=d) as h:
        run = h.run_sm(engine="minhop")        # OpenSM --once; dumps in run.dumps
        h.diag(["smpquery", "nodeinfo", "1"])   # diags tools on the same fabric

Every instance gets its own IBSIM_SOCKNAME, so harnesses in parallel never see each other
(a second ibsim on a taken name would exit and its clients would talk to the first fabric).
The socket name embeds the creating PID: tests use that to prove no process outlives them.
"""

from __future__ import annotations

import codecs
import itertools
import os
import re
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict, Unpack

from ibqos import osmlog, paths
from ibqos.docfile import write_atomic, write_json
from ibqos.errors import ExternalError, InputError
from ibqos.fabric.dla_record import RECORD_TEMP, own_record
from ibqos.fabric.dumps import load_dumps
from ibqos.fabric.live import ibsim_listening, read_live
from ibqos.fabric.model import Fabric
from ibqos.proc import Daemon, pid_alive, run_command, start_daemon, stop_group, wait_until
from ibqos.templating import render

from .ibsim_binary import DEBIAN_VLARB_CAP, IbsimBinary, default_choice, resolve
from .netfile import ibsim_node_id, node_records, read_net
from .resweep import Resweep, sweep_mark, wait_resweep
from .state import read_state


class SmOptions(TypedDict, total=False):
    """How the harness runs one OpenSM: the keywords run_sm and start_sm both take (the
    defaults are _prepare_sm's)."""

    engine: str  # routing_engine, a chain such as "dla,minhop"; default "minhop"
    conf: Mapping[str, Any] | None  # opensm.conf options over the harness's own
    conf_files: Iterable[str | Path] | None  # files appended to opensm.conf whole
    plugin: bool  # load the ibqos event plugin (dla); default False
    plugin_options: str | Path | None  # its event_plugin_options (the table file)
    name: str | None  # the run's directory under run_dir; default the next free smN
    log_flags: int  # OpenSM's -D; default 0x47
    sim_host: str | None  # the node (ibsim id or description) OpenSM runs on; default ibsim's first
    preload: Iterable[str | Path] | None  # test shims preloaded before libumad2sim.so


_counter = itertools.count()
# What OpenSM 3.3.23 (guid2lid, guid2mkey, neighbors) and the dla plugin (dla_groupmap.h) keep
# in OSM_CACHE_DIR
OSM_CACHE_FILES = ("guid2lid", "guid2mkey", "neighbors", "ibqos-dla-groups")
SOCK_PREFIX = "ibqos-"

# OpenSM 3.3.23's engines, plus the plugin's. OpenSM itself silently ignores an unknown name
# and routes with minhop, which would hide a typo: refuse it here instead.
BUILTIN_ENGINES = ("minhop", "updn", "dnup", "file", "ftree", "lash", "dor", "torus-2QoS", "nue", "dfsssp", "sssp")
PLUGIN_ENGINES = ("dla",)


def engine_chain(text: str) -> list[str]:
    """The engines of a `routing_engine` value ("dla,minhop"), in order: the one reader of it."""
    return [e.strip() for e in text.split(",") if e.strip()]


def check_engines(engine: str, plugin: bool) -> None:
    for name in engine_chain(engine):
        if name in PLUGIN_ENGINES and not plugin:
            raise InputError(f"routing engine {name!r} needs the ibqos plugin (plugin=True)", field="routing_engine")
        if name not in BUILTIN_ENGINES + PLUGIN_ENGINES:
            raise InputError(
                f"unknown routing engine {name!r} (known: {', '.join(BUILTIN_ENGINES + PLUGIN_ENGINES)})",
                field="routing_engine",
            )


# PortInfo VLArbitrationHighCap/LowCap of every port of Debian's ibsim (sim_net.c); the
# patched one's: IbsimBinary.vlarb_cap.
IBSIM_VLARB_CAP = DEBIAN_VLARB_CAP


def sock_prefix_for(pid: int) -> str:
    return f"{SOCK_PREFIX}{pid}-"


@dataclass
class NetSize:
    nodes: int
    switches: int
    ports: int


# ibsim 0.10: "fatal: error at /path/fabric.net: line 5"
_NET_ERROR = re.compile(r"error at .*: line (\d+)")


def net_size(netfile: Path) -> NetSize:
    """Count a net file's records so ibsim's -N/-S/-P are large enough (its defaults stop at
    2048 nodes and 256 switches)."""
    nodes = list(node_records(read_net(netfile)))
    if not nodes:
        raise InputError("no Switch/Hca records: not an ibsim net file", file=netfile)
    switches = sum(n.kind == "SWITCH" for n in nodes)
    return NetSize(len(nodes), switches, sum(n.ports + 1 for n in nodes))


def sm_node_name(netfile: Path) -> str:
    """The node description of the node ibsim attaches OpenSM to: the net file's first node
    record."""
    for node in node_records(read_net(netfile)):
        if node.name:
            return node.desc
    raise InputError("no Switch/Hca records: not an ibsim net file", file=netfile)


def net_port_types(netfile: Path) -> dict[str, str]:
    """OpenSM port names ("<node description>/P<n>") of a net file's ports -> node type (CA,
    SWITCH, ROUTER), for resolving a policy's node_type filters before the fabric runs.
    ibsim gives every node the description netfile.NetNode.desc says."""
    out: dict[str, str] = {}
    for node in node_records(read_net(netfile)):
        ports = range(node.ports + 1) if node.kind == "SWITCH" else range(1, node.ports + 1)
        out.update({f"{node.desc}/P{p}": node.kind for p in ports})
    return out


# at most 4294: OpenSM multiplies it by 10^6 into a 32-bit microsecond count
ONCE_SWEEP_INTERVAL_S = 3600


@dataclass
class SmRun:
    """One finished `opensm --once`."""

    log: Path
    dumps: Path
    conf: Path
    rc: int
    wall_s: float

    def lines(self) -> list[osmlog.LogLine]:
        return osmlog.parse(self.log)

    def engine_seconds(self) -> float | None:
        return osmlog.engine_seconds(self.lines())

    def configured_engines(self) -> list[str]:
        return osmlog.configured_engines(self.lines())


class SmDaemon:
    """OpenSM running as a daemon on the harness fabric."""

    def __init__(self, daemon: Daemon, log: Path, dumps: Path, conf: Path):
        self.daemon, self.log, self.dumps, self.conf = daemon, log, dumps, conf

    @property
    def pid(self) -> int:
        return self.daemon.pid

    def alive(self) -> bool:
        return self.daemon.alive()

    def lines(self) -> list[osmlog.LogLine]:
        return osmlog.parse(self.log)

    def sweeps(self) -> int:
        return osmlog.count_subnet_up(self.log)

    def wait_for_sweeps(self, n: int, timeout: float = 120) -> None:
        """Wait until OpenSM has logged SUBNET UP at least n times in total."""

        def done() -> bool:
            if not self.alive():
                raise ExternalError(f"OpenSM (pid {self.pid}) died; see {self.log}")
            return self.sweeps() >= n

        wait_until(done, timeout=timeout, interval=0.1, what=f"{n} OpenSM sweep(s) in {self.log}")

    def wait_settled(self, timeout: float = 120) -> None:
        """Wait until OpenSM's start is over: after its last SUBNET UP a light sweep found
        nothing to do (the next one began, no heavy sweep between). On ibsim the first light
        sweep after the first SUBNET UP sweeps heavily again (the ports its link manager
        brought up), rewriting the dumps and the plugin's record about 2 s in: a test that
        plants a file there must not race it."""

        def done() -> bool:
            if not self.alive():
                raise ExternalError(f"OpenSM (pid {self.pid}) died; see {self.log}")
            text = self.log.read_bytes()
            after = text[text.rfind(b"SUBNET UP") :] if b"SUBNET UP" in text else b""
            return after.count(b"INITIATING LIGHT SWEEP") >= 2 and b"INITIATING HEAVY SWEEP" not in after

        wait_until(done, timeout=timeout, interval=0.1, what=f"OpenSM's start to settle in {self.log}")

    def _between_sweeps(self) -> int | None:
        """The log offset of the last SUBNET UP when no heavy sweep began after it, else None."""
        text = self.log.read_bytes()
        up = text.rfind(b"SUBNET UP")
        if up < 0 or b"INITIATING HEAVY SWEEP" in text[up:]:
            return None
        return up

    def load_dumps(self, *, require_sl2vl: bool = True, timeout: float = 120) -> Fabric:
        """The dumps of one sweep while this OpenSM keeps sweeping. OpenSM rewrites each dump
        in place, one file after another, just before it logs SUBNET UP: read at the wrong
        moment, one file comes from the next sweep (a CA recabled between them is in the
        SL2VL dump and not yet in the subnet list). So read only while no heavy sweep began
        after the last SUBNET UP, and again if one began or ended during the read."""

        found: list[Fabric] = []

        def done() -> bool:
            if not self.alive():
                raise ExternalError(f"OpenSM (pid {self.pid}) died; see {self.log}")
            before = self._between_sweeps()
            if before is None:
                return False
            try:
                fabric = load_dumps(self.dumps, require_sl2vl=require_sl2vl)
            except InputError:
                if self._between_sweeps() == before:
                    raise  # nothing rewrote them: the dumps themselves are wrong
                return False
            if self._between_sweeps() != before:
                return False
            found.append(fabric)
            return True

        wait_until(done, timeout=timeout, interval=0.1, what=f"OpenSM's dumps between two sweeps in {self.dumps}")
        return found[-1]

    def record(self):
        """The ibqos plugin's record when this OpenSM wrote it (plugin=True), else None."""

        return own_record(self.dumps, self.pid)

    def wait_for_record_sweeps(self, n: int, timeout: float = 120) -> None:
        """Wait until the plugin's record says this OpenSM ended n sweeps: unlike
        wait_for_sweeps, right when log_max_size truncates the log."""

        def done() -> bool:
            if not self.alive():
                raise ExternalError(f"OpenSM (pid {self.pid}) died; see {self.log}")
            rec = self.record()
            return rec is not None and rec.subnet_up >= n

        wait_until(done, timeout=timeout, interval=0.1, what=f"{n} OpenSM sweep(s) in the record in {self.dumps}")

    def wait_for_log(self, pattern: str, timeout: float = 60) -> str:
        """For the plugin's tests of its own log lines."""
        found: list[str] = []

        def done() -> bool:
            found[:] = osmlog.matching(self.lines(), pattern)
            return bool(found)

        wait_until(done, timeout=timeout, interval=0.1, what=f"/{pattern}/ in {self.log}")
        return found[-1]

    def stop(self) -> int | None:
        rc = self.daemon.stop(grace=10)
        # an OpenSM stopped between the plugin's write of its record and the rename (SIGKILL
        # after the grace, or an exit while the sweeper writes) leaves the temp file: with no
        # writer left it is debris in the run directory, which an interrupted run leaves whole
        (self.dumps / RECORD_TEMP).unlink(missing_ok=True)
        return rc


class AttachedProcess:
    """A daemon started by an earlier `ibqos fabric up`, known only by PID. Before touching it we
    check it still carries our IBSIM_SOCKNAME, so a recycled PID is never killed."""

    def __init__(self, pid: int, sock: str, log_path: Path):
        self.pid, self.sock, self.log_path = pid, sock, log_path

    def alive(self) -> bool:
        env = _environ(self.pid)
        return env is not None and pid_alive(self.pid) and env.get("IBSIM_SOCKNAME") == self.sock

    def stop(self, grace: float = 5.0) -> None:
        if self.alive():
            stop_group(self.pid, self.alive, grace=grace)


def _environ(pid: int) -> dict[str, str] | None:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    return dict(e.decode(errors="surrogateescape").split("=", 1) for e in raw.split(b"\0") if b"=" in e)


def stop_found(run_dir: Path) -> list[str]:
    """Stop the ibsim and OpenSMs a Harness started for `run_dir` when its state file cannot
    say which (cut short, garbled), found by what the harness gave each and nothing else has:
    ibsim runs in run_dir, every OpenSM below it with OSM_CACHE_DIR=run_dir, both with a
    socket name of ours (SOCK_PREFIX), and each is stopped only while it still carries that
    socket (AttachedProcess). An admin's shell or diag given the fabric's IBSIM_SOCKNAME by
    hand is neither ibsim nor opensm, so never among them. Returns what was stopped
    ("ibsim pid N"), OpenSMs first, as Harness.stop."""
    run_dir = run_dir.resolve()
    found: list[tuple[str, AttachedProcess]] = []
    for p in Path("/proc").iterdir():
        env = _environ(int(p.name)) if p.name.isdigit() else None
        sock = env.get("IBSIM_SOCKNAME", "") if env is not None else ""
        if env is None or not sock.startswith(SOCK_PREFIX):
            continue
        try:
            name = Path(os.fsdecode((p / "cmdline").read_bytes().split(b"\0")[0])).name
            cwd = Path(os.readlink(p / "cwd"))
        except OSError:
            continue
        if name == "ibsim" and cwd == run_dir:
            found.append(("ibsim", AttachedProcess(int(p.name), sock, run_dir / "ibsim.log")))
        elif name == "opensm" and env.get("OSM_CACHE_DIR") == str(run_dir) and cwd.is_relative_to(run_dir):
            found.append(("OpenSM", AttachedProcess(int(p.name), sock, cwd / "opensm.out")))
    stopped = []
    for kind, proc in sorted(found, key=lambda f: f[0] == "ibsim"):
        proc.stop()
        stopped.append(f"{kind} pid {proc.pid}")
    return stopped


class Harness:
    def __init__(
        self,
        netfile: str | Path,
        run_dir: str | Path | None = None,
        *,
        console: bool = False,
        ready_timeout: float = 120,
        ibsim: str | None = None,
        ibsim_args: tuple[str, ...] = (),
    ):
        """`ibsim`: "debian", "patched" or "auto" (ibqos_sim.harness.ibsim_binary); default
        IBQOS_IBSIM, else Debian's. `ibsim_args`: more options for it (e.g. the patched
        one's `-a 8`)."""
        self.ibsim_args = tuple(ibsim_args)
        self.netfile = Path(netfile).resolve()
        self.ibsim_choice = ibsim or default_choice("debian")
        self._binary: IbsimBinary | None = None
        if run_dir is None:
            run_dir = Path("runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
        self.run_dir = Path(run_dir).resolve()
        self.console_enabled = console
        self.ready_timeout = ready_timeout
        self.sock = f"{sock_prefix_for(os.getpid())}{next(_counter)}-{uuid.uuid4().hex[:8]}"
        self.ibsim: Daemon | AttachedProcess | None = None  # attach(): one an earlier process started
        self.attached_sms: list[AttachedProcess] = []
        self._sms: list[SmDaemon] = []
        self._sm_runs = itertools.count()

    @property
    def binary(self) -> IbsimBinary:
        """The ibsim this harness runs, with its options (resolved once: a build in between
        changes nothing)."""
        if self._binary is None:
            self._binary = resolve(self.ibsim_choice).running(self.ibsim_args)
        return self._binary

    # ---- lifecycle -------------------------------------------------------
    def __enter__(self) -> Harness:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def forget_sm_cache(self) -> None:
        """Drop what OpenSMs run here before kept in OSM_CACHE_DIR (the run directory). A run
        directory is an SM host's cache, kept across its OpenSM restarts (a test of a restart
        relies on it); a caller that starts another fabric there (the dry run's --out, used
        again) drops it first: OpenSM took the old LIDs and neighbours (ERR 7518 on another
        wiring), dla the old groups."""
        for name in OSM_CACHE_FILES:
            (self.run_dir / name).unlink(missing_ok=True)

    def _lf_netfile(self) -> Path:
        """The net file as ibsim is to read it. ibsim 0.10 ends a line at LF only: a file saved
        with CR LF gave every node whose description is not quoted a description ending in CR,
        which no reader of the net file (netfile.py, as Python reads lines) sees. And it reads
        a leading byte-order mark (which netfile.py's reader drops) as part of the first line:
        a first 'Switch' record there was no record, and its links stopped ibsim ('cannot build
        a fabric'). Such a file is handed to ibsim as a copy with LF endings and no mark, line
        for line the same."""
        raw = self.netfile.read_bytes()
        fixed = raw.removeprefix(codecs.BOM_UTF8).replace(b"\r\n", b"\n")
        if fixed == raw:
            return self.netfile
        copy = self.run_dir / "ibsim-lf.net"
        write_atomic(copy, fixed)
        return copy

    def start(self) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        ibsim = self.binary.path
        paths.umad2sim_lib()
        s = net_size(self.netfile)  # read at start only: `fabric down` stops a fabric whose net file is gone
        cmd = [
            ibsim,
            "-s",
            "-N",
            str(max(2048, s.nodes + 16)),
            "-S",
            str(max(256, s.switches + 16)),
            "-P",
            str(max(13312, s.ports + 64)),
        ]
        cmd += self.ibsim_args
        if not self.console_enabled:
            cmd.append("-n")
        cmd.append(str(self._lf_netfile()))
        env = dict(os.environ, IBSIM_SOCKNAME=self.sock)
        self.ibsim = daemon = start_daemon(
            "ibsim", cmd, log_path=self.run_dir / "ibsim.log", env=env, cwd=self.run_dir, console=self.console_enabled
        )

        def ready() -> bool:
            if not daemon.alive():
                # ibsim says why it exited only on its output, as a failed command does
                log = daemon.log_path.read_text(errors="replace")
                if m := _NET_ERROR.search(log):
                    # ibsim's own parser refused the net file: bad input, said as such
                    raise InputError("ibsim cannot parse this net file", file=self.netfile, line=int(m.group(1)))
                if "sim_init failed" in log:
                    raise InputError(
                        "ibsim cannot build a fabric from this net file (check that both ends of every link agree)",
                        file=self.netfile,
                    )
                raise ExternalError(f"ibsim {daemon.ended()}: {_tail(daemon.log_path)}")
            # ready when its control socket is bound: ibsim binds it after building the fabric
            # (and after printing "Network simulator ready.", so that line is no signal)
            return ibsim_listening(self.sock) is not False

        wait_until(ready, timeout=self.ready_timeout, interval=0.05, what="ibsim to be ready")
        write_json(
            self.run_dir / "harness.json",
            {
                "netfile": str(self.netfile),
                "sock": self.sock,
                "ibsim_pid": self.ibsim.pid,
                "ibsim": self.binary.to_json(),
            },
            indent=None,
        )

    @classmethod
    def attach(cls, run_dir: str | Path) -> Harness:
        """The fabric that `ibqos fabric up` left running in run_dir."""
        run_dir = Path(run_dir).resolve()
        state, _ = read_state(run_dir)
        h = cls(state.netfile, run_dir, ibsim=state.ibsim.kind, ibsim_args=tuple(state.ibsim.args))
        h.sock = state.sock
        h.ibsim = AttachedProcess(state.ibsim_pid, h.sock, run_dir / "ibsim.log")
        h.attached_sms = [AttachedProcess(p, h.sock, run_dir / "opensm.out") for p in state.sm_pids]
        return h

    def record_sm(self, sm: SmDaemon) -> None:
        """Remember a daemon OpenSM in the state file so a later `fabric down` stops it."""
        state = self.run_dir_state()
        state.setdefault("sm_pids", []).append(sm.pid)
        write_json(self.run_dir / "harness.json", state, indent=None)

    def run_dir_state(self) -> dict[str, Any]:
        return read_state(self.run_dir)[1]

    def detach(self) -> None:
        """Leave every process running (for `ibqos fabric up` / `run-sm --daemon`)."""
        self.ibsim = None
        self._sms.clear()

    def stop(self) -> None:
        for sm in getattr(self, "attached_sms", []):
            sm.stop()
        for sm in self._sms:
            sm.stop()
        self._sms.clear()
        if self.ibsim:
            self.ibsim.stop()

    def alive(self) -> bool:
        return bool(self.ibsim and self.ibsim.alive())

    # ---- clients ---------------------------------------------------------
    @property
    def env(self) -> dict[str, str]:
        """Environment for any libibumad client (OpenSM, diags, the read-back) on this fabric."""
        return dict(
            os.environ,
            LD_PRELOAD=str(paths.umad2sim_lib()),
            IBSIM_SOCKNAME=self.sock,
            OSM_CACHE_DIR=str(self.run_dir),
            OSM_TMP_DIR=str(self.run_dir),
        )

    def diag(self, cmd: list[str], timeout: float = 60, check: bool = True):
        self._check_alive()
        return run_command(cmd, env=self.env, timeout=timeout, cwd=self.run_dir, check=check)

    def console(self, line: str) -> None:
        self._check_alive()
        if not self.console_enabled:
            raise ExternalError("this harness was started without the ibsim console (console=True)")
        if not isinstance(self.ibsim, Daemon):  # attach(): ibsim's console belongs to the process that started it
            raise ExternalError("the ibsim console is only reachable from the process that started the fabric")
        self.ibsim.send(line)

    def command(self, line: str, timeout: float = 30) -> str:
        """Run one ibsim console command and return ibsim's answer. ibsim handles console
        lines in order and echoes comment lines, so a marker comment sent after the command
        tells when it is done. An answer line starting with '#' is ibsim refusing it
        (unknown node, bad port, port not linked, no previous link): raised as an error."""
        log = self.run_dir / "ibsim.log"
        marker = f"# ibqos-done-{next(_counter)}"
        start = log.stat().st_size
        self.console(line)
        self.console(marker)
        answer: list[str] = []

        def done() -> bool:
            with open(log, "rb") as f:
                f.seek(start)
                text = f.read().decode(errors="replace")
            if marker not in text:
                self._check_alive()
                return False
            answer[:] = [ln.replace("sim> ", "").strip() for ln in text.split(marker)[0].splitlines()]
            return True

        wait_until(done, timeout=timeout, interval=0.02, what=f"ibsim to run {line!r}")
        answer = [a for a in answer if a and not a.startswith("ibwarn:")]
        refused = [a for a in answer if a.startswith("#")]
        if refused:
            raise ExternalError(f"ibsim refused {line!r}: {refused[0].lstrip('# ')}")
        return "\n".join(answer)

    # A fault on the running fabric: ibsim changes the links and sends trap 128, OpenSM
    # re-sweeps. With `sm` (or the one daemon OpenSM this harness started) the call returns
    # only when that re-sweep is complete, with what it logged.
    def unlink(
        self, node: str, port: int | None = None, *, sm: SmDaemon | None = None, timeout: float = 120
    ) -> Resweep | None:
        """Take one link down (`Unlink "node"[port]`), or without a port every link of node
        (its id in the net file, or its node description)."""
        return self._change(
            f'Unlink "{ibsim_node_id(self.netfile, node)}"' + (f"[{port}]" if port else ""), sm, timeout
        )

    def relink(
        self, node: str, port: int | None = None, *, sm: SmDaemon | None = None, timeout: float = 120
    ) -> Resweep | None:
        """Bring back what `unlink` took down (`ReLink "node"[port]`), on the same peer ports."""
        return self._change(
            f'ReLink "{ibsim_node_id(self.netfile, node)}"' + (f"[{port}]" if port else ""), sm, timeout
        )

    def switch_down(self, name: str, **kw) -> Resweep | None:
        """A switch fails: every link of it goes down (its CAs lose their only link)."""
        return self.unlink(name, **kw)

    def switch_up(self, name: str, **kw) -> Resweep | None:
        return self.relink(name, **kw)

    def _change(self, line: str, sm: SmDaemon | None, timeout: float) -> Resweep | None:
        if sm is None:
            running = [s for s in self._sms if s.alive()]
            sm = running[0] if len(running) == 1 else None
        if sm is None:
            self.command(line)
            return None
        mark = sweep_mark(sm.log)
        self.command(line)
        return wait_resweep(sm, mark, timeout=timeout)

    def ibsim_ended(self) -> str:
        """Why ibsim is not running, for the error that says so: its exit status or signal
        when this process started it (ibsim says why only in its log: `ibpanic: …`)."""
        if self.ibsim is None:
            return "fabric down?"
        if isinstance(self.ibsim, Daemon):
            return f"pid {self.ibsim.pid} {self.ibsim.ended() or 'running'}"
        return f"pid {self.ibsim.pid} is gone"  # attach(): its exit status went to its parent

    def _check_alive(self) -> None:
        if not self.alive():
            raise ExternalError(
                f"ibsim is not running ({self.ibsim_ended()}); last lines of "
                f"{self.run_dir / 'ibsim.log'}: {_tail(self.run_dir / 'ibsim.log')}"
            )

    # ---- OpenSM ----------------------------------------------------------
    def _prepare_sm(self, opts: SmOptions, *, daemon: bool) -> tuple[Path, Path, Path, list[str], dict[str, str]]:
        unknown = sorted(opts.keys() - SmOptions.__optional_keys__)
        if unknown:  # a TypedDict is a type, not a check: a misspelt option must not pass
            raise TypeError(
                f"unknown OpenSM run option(s) {', '.join(unknown)} (SmOptions: {sorted(SmOptions.__optional_keys__)})"
            )
        engine, plugin = opts.get("engine", "minhop"), opts.get("plugin", False)
        plugin_options, log_flags = opts.get("plugin_options"), opts.get("log_flags", 0x47)
        name, conf, conf_files = opts.get("name"), opts.get("conf"), opts.get("conf_files")
        self._check_alive()
        check_engines(engine, plugin)
        if name is None:
            name = next(n for i in self._sm_runs if not (self.run_dir / (n := f"sm{i}")).exists())
        d = self.run_dir / name
        dumps = d / "dumps"
        dumps.mkdir(parents=True, exist_ok=True)
        log, conf_path = d / "osm.log", d / "opensm.conf"
        # force_log_flush: the sweep-end line (SUBNET UP) must reach the log while OpenSM runs.
        # --once: OpenSM's main thread waits for SUBNET UP in slices of sweep_interval seconds,
        # and 0 makes it spin (cl_event_wait_on returns at once): a whole core for the run on
        # this 2-core machine, up to 2.6 s of CPU for a 342-CA run. ONCE_SWEEP_INTERVAL_S is
        # longer than any --once run, so no periodic sweep happens either.
        options = {"sweep_interval": 2 if daemon else ONCE_SWEEP_INTERVAL_S, "force_log_flush": "TRUE"}
        if plugin:
            options["event_plugin_name"] = "ibqos"
            if plugin_options:
                options["event_plugin_options"] = str(plugin_options)
        options.update(conf or {})
        fragments = []
        for f in conf_files or []:
            try:
                fragments.append((str(f), Path(f).read_text()))
            except OSError as e:
                raise InputError(e.strerror or "cannot read", file=f) from e
        write_atomic(
            conf_path,
            render(
                "opensm.harness.conf.j2",
                run_dir=str(self.run_dir),
                engine=engine,
                dumps=str(dumps),
                log=str(log),
                log_flags=f"0x{log_flags:02x}",
                options=options,
                fragments=fragments,
            ),
        )
        env = self.env
        if opts.get("sim_host"):  # a second SM on its own node (libumad2sim's SIM_HOST)
            env["SIM_HOST"] = str(opts["sim_host"])
        if preload := [str(p) for p in opts.get("preload") or []]:
            env["LD_PRELOAD"] = ":".join([*preload, env["LD_PRELOAD"]])
        if plugin:
            lib = paths.plugin_dir()
            if not (lib / "libibqos.so").exists():
                raise ExternalError(f"{lib}/libibqos.so is missing: run 'make build' first")
            env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(lib), env.get("LD_LIBRARY_PATH")]))
        opensm = paths.require_tool("opensm", "opensm")
        cmd = [opensm, "-F", str(conf_path), "-f", str(log), "-D", f"0x{log_flags:02x}"]
        return d, log, dumps, cmd, env

    def run_sm(self, *, timeout: float = 600, check: bool = True, **opts: Unpack[SmOptions]) -> SmRun:
        """One `opensm --once`. With check, any ERR line, a non-zero exit or a missing
        SUBNET UP raises one ExternalError that quotes the relevant log lines."""
        d, log, dumps, cmd, env = self._prepare_sm(opts, daemon=False)
        t0 = time.monotonic()
        try:
            cp = run_command(cmd + ["--once"], env=env, timeout=timeout, cwd=d, check=False)
        finally:
            # killed (a timeout, or ibqos itself interrupted) between the plugin's write of its
            # record and the rename, OpenSM leaves the temp file, as SmDaemon.stop says
            (dumps / RECORD_TEMP).unlink(missing_ok=True)
        write_atomic(d / "opensm.out", cp.stdout + cp.stderr)
        run = SmRun(log=log, dumps=dumps, conf=d / "opensm.conf", rc=cp.returncode, wall_s=time.monotonic() - t0)
        if check:
            check_sm_run(run.lines(), run.rc, log)
        return run

    def start_sm(self, *, wait: bool = True, timeout: float = 300, **opts: Unpack[SmOptions]) -> SmDaemon:
        """OpenSM as a daemon (sweeping every 2 s unless `conf` says otherwise); with wait, once
        its first sweep ended."""
        d, log, dumps, cmd, env = self._prepare_sm(opts, daemon=True)
        sm = SmDaemon(
            start_daemon("opensm", cmd, log_path=d / "opensm.out", env=env, cwd=d), log, dumps, d / "opensm.conf"
        )
        self._sms.append(sm)
        if wait:
            sm.wait_for_sweeps(1, timeout=timeout)
        return sm

    def read_back(self, save: bool = True):
        """Read the fabric live into the model; saved as run_dir/fabric.json for later stages."""

        self._check_alive()
        fabric = read_live(self.env)
        if save:
            fabric.save(self.run_dir / "fabric.json")
        return fabric


def check_sm_run(lines: list[osmlog.LogLine], rc: int, log: Path, allow: tuple[str, ...] = ()) -> None:
    """`allow`: ERR codes that are findings, not failures (dla's refusal, in its record)."""
    errs = osmlog.errors(lines, allow)
    up = osmlog.subnet_up_count(lines)
    problems = []
    if rc != 0:
        problems.append(f"exited with {rc}")
    if errs:
        problems.append(f"logged {len(errs)} ERR line(s)")
    if not up:
        problems.append("never reached SUBNET UP")
    if problems:
        quote = "; ".join(errs[:3]) or _tail(log, 3).replace("\n", " | ")
        raise ExternalError(f"OpenSM {', '.join(problems)} ({log}): {quote}")


def _tail(path: Path, n: int = 3) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-n:])
    except OSError:
        return "(no log)"
