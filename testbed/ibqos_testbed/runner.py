"""Execute a run plan: phase by phase, servers first, clients once their server listens.

Per phase: check -> start servers -> wait until they listen -> start clients -> wait -> reap.
A flow that cannot run (host unreachable, binary missing, no RDMA device, port taken,
timeout) gets a one-line error; the other flows of the phase carry on and keep their results.
Every process has a deadline and is killed by PID when it passes it, or when its peer has
ended and it has not followed within STRAGGLER_GRACE seconds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ibqos.errors import InputError, ProcessError

from . import diagnose
from .hosts import Handle, Host, StartFailed
from .results import FILE as RESULTS_FILE
from .results import FlowResult, ProcessResult, Results
from .runplan import Flow, Phase, Process, RunPlan

log = logging.getLogger("ibqos.testbed")

POLL = 0.1
STRAGGLER_GRACE = 5.0


@dataclass
class _Proc:
    """One perftest process of a flow while the phase runs."""

    spec: Process
    result: ProcessResult
    host: Host
    handle: Handle | None = None
    deadline: float = 0.0  # its own timeout (monotonic clock)
    straggle_deadline: float = 0.0  # set once its peer has ended
    straggler: bool = False

    @property
    def running(self) -> bool:
        return self.handle is not None and self.result.ended is None


@dataclass
class _Flow:
    flow: Flow
    server: _Proc
    client: _Proc
    error: str | None = None
    listening: bool = False
    procs: list[_Proc] = field(init=False)

    def __post_init__(self):
        self.procs = [self.server, self.client]

    def fail(self, message: str) -> None:
        if self.error is None:
            self.error = message


class Runner:
    def __init__(
        self,
        run: RunPlan,
        results_dir: Path,
        *,
        report: Callable[[str], None] = lambda line: None,
        listen_timeout: float = 30.0,
    ):
        self.run, self.dir, self.report = run, results_dir, report
        self.listen_timeout = listen_timeout
        self.hosts: dict[str, Host] = {}
        self._unreachable: dict[str, str | None] = {}

    def execute(self) -> Results:
        if (self.dir / RESULTS_FILE).exists():
            # Output files are appended to; mixing two runs would report the older one.
            raise InputError("already holds the results of a run: remove it or choose another directory", file=self.dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        started, flows, interrupted = time.time(), [], False
        try:
            for phase in self.run.phases:
                self.report(f"phase {phase.name}: {phase.description}")
                flows += self._run_phase(phase)
        except KeyboardInterrupt:
            interrupted = True
        results = Results(runplan=self.run, started=started, ended=time.time(), interrupted=interrupted, flows=flows)
        results.save(self.dir)
        if interrupted:
            raise KeyboardInterrupt
        return results

    # -- one phase -------------------------------------------------------------------------

    def _run_phase(self, phase: Phase) -> list[FlowResult]:
        flows = [self._prepare(phase, f) for f in phase.flows]
        try:
            self._check_hosts_and_ports(flows)
            self._start(flows, "server")
            ready_at = self._wait_listening(flows)
            self._start_clients(flows, ready_at)
            self._wait(flows)
        finally:
            self._reap(flows)  # also on Ctrl-C: nothing outlives the run
        out = []
        for f in flows:
            self._explain(f)
            if f.error:
                self.report(f"flow {f.flow.id} ({phase.name}): {f.error}")
            out.append(
                FlowResult(
                    phase=phase.name,
                    id=f.flow.id,
                    kind=f.flow.kind,
                    sl=f.flow.sl,
                    class_name=f.flow.class_name,
                    server=f.server.result,
                    client=f.client.result,
                    error=f.error,
                )
            )
        return out

    def _prepare(self, phase: Phase, flow: Flow) -> _Flow:
        def proc(role: str, spec: Process) -> _Proc:
            rel = f"{phase.name}/{flow.id}.{role}"
            return _Proc(
                spec,
                ProcessResult(role=role, host=spec.host, argv=spec.argv, stdout=rel + ".out", stderr=rel + ".err"),
                self._host(spec.host),
            )

        (self.dir / phase.name).mkdir(parents=True, exist_ok=True)
        return _Flow(flow, proc("server", flow.server), proc("client", flow.client))

    def _host(self, name: str) -> Host:
        return self.hosts.setdefault(name, Host(name))

    def _check_hosts_and_ports(self, flows: list[_Flow]) -> None:
        for f in flows:
            for p in f.procs:
                if p.host.name not in self._unreachable:
                    self._unreachable[p.host.name] = p.host.unreachable_reason()
                if reason := self._unreachable[p.host.name]:
                    f.fail(reason)
        by_host: dict[str, set[int]] = {}
        for f in flows:
            if f.error:
                continue
            h = f.server.host
            if h.name not in by_host:
                by_host[h.name] = self._listening(h)
            if f.flow.tcp_port in by_host[h.name]:
                f.fail(f"TCP port {f.flow.tcp_port} already in use on {h.name}")

    def _start(self, flows: list[_Flow], role: str) -> None:
        for f in flows:
            if not f.error:
                self._launch(f, getattr(f, role))

    def _launch(self, f: _Flow, p: _Proc) -> None:
        for rel in (p.result.stdout, p.result.stderr):
            (self.dir / rel).write_bytes(b"")  # an interrupted earlier run's leftovers
        try:
            p.handle = p.host.start(
                f"{f.flow.id}.{p.result.role}",
                p.spec.argv,
                p.spec.timeout,
                self.dir / p.result.stdout,
                self.dir / p.result.stderr,
            )
        except StartFailed as e:
            p.result.error = (
                f"{p.spec.argv[0]} not found on {p.host.name}: install perftest there"
                if "No such file" in str(e)
                else str(e)
            )
            f.fail(p.result.error)
            return
        p.result.started = time.time()
        p.deadline = time.monotonic() + p.spec.timeout

    def _wait_listening(self, flows: list[_Flow]) -> float:
        """Until every started server listens or has exited; returns when they were ready."""
        give_up = time.monotonic() + self.listen_timeout
        pending = [f for f in flows if f.server.running]
        while pending:
            ports = {h: self._listening(self.hosts[h]) for h in {f.server.host.name for f in pending}}
            self._poll(pending)
            for f in pending:
                f.listening = f.server.running and f.flow.tcp_port in ports[f.server.host.name]
            pending = [f for f in pending if f.server.running and not f.listening]
            if pending and time.monotonic() > give_up:
                for f in pending:
                    f.fail(
                        f"{f.flow.server.argv[0]} server on {f.server.host.name} did not "
                        f"listen on TCP port {f.flow.tcp_port} within {self.listen_timeout:g} s"
                    )
                break
            if pending:
                time.sleep(POLL)
        return time.monotonic()

    @staticmethod
    def _listening(host: Host) -> set[int]:
        try:
            return host.listening_ports()
        except ProcessError as e:
            log.warning("cannot list listening ports on %s: %s", host.name, e)
            return set()

    def _start_clients(self, flows: list[_Flow], ready_at: float) -> None:
        for f in sorted(flows, key=lambda f: f.flow.start_delay):
            if f.error or not f.listening:
                continue
            delay = ready_at + f.flow.start_delay - time.monotonic()
            while delay > 0:  # keep reaping early failures while we wait
                self._poll(flows)
                time.sleep(min(POLL, delay))
                delay = ready_at + f.flow.start_delay - time.monotonic()
            if f.server.running:
                self._launch(f, f.client)

    def _wait(self, flows: list[_Flow]) -> None:
        while any(p.running for f in flows for p in f.procs):
            self._poll(flows)
            now = time.monotonic()
            for f in flows:
                for p, peer in ((f.server, f.client), (f.client, f.server)):
                    if not p.running:
                        continue
                    if now > p.deadline:
                        p.result.timed_out = True
                        self._stop(p)
                    elif p.straggle_deadline and now > p.straggle_deadline:
                        p.straggler = True
                        self._stop(p)
                    elif not p.straggle_deadline and (peer.result.ended is not None or peer.handle is None):
                        # Its peer is gone, so it can only wait for nobody.
                        p.straggle_deadline = now + STRAGGLER_GRACE
            time.sleep(POLL)

    def _poll(self, flows: list[_Flow]) -> None:
        for f in flows:
            for p in f.procs:
                if p.running and p.handle is not None and (rc := p.handle.poll()) is not None:
                    p.result.ended, p.result.returncode = time.time(), rc

    def _stop(self, p: _Proc) -> None:
        assert p.handle is not None, "only a started process is stopped"
        p.host.stop(p.handle)
        p.result.ended = time.time()
        p.result.returncode = p.handle.poll()

    def _reap(self, flows: list[_Flow]) -> None:
        for f in flows:
            for p in f.procs:
                if p.running and p.handle is not None:
                    log.info("killing straggler %s (pid %d)", p.handle.name, p.handle.daemon.pid)
                    self._stop(p)

    def _explain(self, f: _Flow) -> None:
        """One line per failed process, then the flow's: a process's own failure before that
        of a straggler killed because its peer had ended, the server's before the client's."""
        for p in f.procs:
            r = p.result
            if r.started is None or r.error:
                continue
            if p.straggler:
                r.error = (
                    f"{p.spec.argv[0]} {r.role} on {p.host.name} still ran "
                    f"{STRAGGLER_GRACE:g} s after its peer ended and was killed"
                )
            elif r.timed_out or r.returncode != 0:
                r.error = diagnose.explain(
                    tool=p.spec.argv[0],
                    host=p.host.name,
                    returncode=r.returncode,
                    stderr=_read(self.dir / r.stderr),
                    stdout=_read(self.dir / r.stdout),
                    timed_out=r.timed_out,
                    timeout=p.spec.timeout,
                    remote=not p.host.is_local,
                )
        for p in sorted(f.procs, key=lambda p: p.straggler):
            if p.result.error:
                f.fail(p.result.error)
        if not f.error and f.client.result.started is None:
            f.fail(f"{f.flow.client.argv[0]} server on {f.server.host.name} ended before its client could start")


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
