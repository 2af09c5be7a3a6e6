"""Where perftest runs: this machine, or a node reached with ssh -o BatchMode=yes.

A remote process is started as `sh -c 'echo ibqos-remote-pid $$ >&2; exec timeout ...'`, so
the runner learns its PID on the node (to kill a straggler there, not only the local ssh
client) and the node itself kills it a little after the runner's own deadline if the runner
dies. Listening TCP ports are read from /proc/net/tcp{,6}: nothing beyond a Linux kernel
and coreutils is needed on the nodes.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from ibqos import proc
from ibqos.errors import ProcessError

LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")
_TCP_LISTEN = "0A"
_REMOTE_PID = re.compile(r"^ibqos-remote-pid (\d+)$", re.MULTILINE)
SSH_OPTIONS = ["-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "LogLevel=ERROR"]
REMOTE_KILL_AFTER = 5  # seconds the node waits beyond the runner's deadline


class StartFailed(Exception):
    """The process could not be started at all (e.g. the binary is missing locally)."""


@dataclass
class Handle:
    name: str
    daemon: proc.Daemon
    stderr_path: Path

    def poll(self) -> int | None:
        return self.daemon.popen.poll()


class Host:
    def __init__(self, name: str):
        self.name = name

    @property
    def is_local(self) -> bool:
        return self.name in LOCAL_NAMES

    def start(self, name: str, argv: list[str], timeout: float, out: Path, err: Path) -> Handle:
        cmd = argv if self.is_local else self._ssh(self._remote_script(argv, timeout))
        try:
            d = proc.start_daemon(name, cmd, log_path=out, stderr_path=err)
        except ProcessError as e:
            raise StartFailed(str(e)) from e
        return Handle(name, d, err)

    def listening_ports(self) -> set[int]:
        """TCP ports in LISTEN state on this host; ProcessError if it cannot be asked."""
        if self.is_local:
            text = ""
            for f in ("/proc/net/tcp", "/proc/net/tcp6"):
                try:
                    text += Path(f).read_text()
                except OSError:
                    pass
        else:
            text = proc.run_command(self._ssh("cat /proc/net/tcp /proc/net/tcp6 2>/dev/null; true"), timeout=20).stdout
        return parse_listening(text)

    def unreachable_reason(self) -> str | None:
        """None when the host runs commands; else why not, in one line."""
        if self.is_local:
            return None
        try:
            proc.run_command(self._ssh("true"), timeout=30)
        except ProcessError as e:
            return f"host {self.name} unreachable: {_first_line(e.output) or e}"
        return None

    def stop(self, h: Handle) -> None:
        """Kill a straggler: on the node by its PID, then the local ssh client's process group."""
        if not self.is_local and h.poll() is None:
            pid = remote_pid(h.stderr_path)
            if pid:
                proc.run_command(
                    self._ssh(f"kill -TERM {pid} 2>/dev/null; sleep 1; kill -KILL {pid} 2>/dev/null; true"),
                    timeout=20,
                    check=False,
                )
        h.daemon.stop(grace=2.0)

    def _ssh(self, script: str) -> list[str]:
        return ["ssh", *SSH_OPTIONS, self.name, script]

    @staticmethod
    def _remote_script(argv: list[str], timeout: float) -> str:
        limit = f"{timeout + REMOTE_KILL_AFTER:g}"
        inner = f"echo ibqos-remote-pid $$ >&2; exec timeout -k {REMOTE_KILL_AFTER} {limit} " + shlex.join(argv)
        return "sh -c " + shlex.quote(inner)


def parse_listening(text: str) -> set[int]:
    ports = set()
    for ln in text.splitlines():
        f = ln.split()
        # sl local_address rem_address st ...; local_address is HEXIP:HEXPORT
        if len(f) > 3 and f[0].endswith(":") and f[3] == _TCP_LISTEN and ":" in f[1]:
            ports.add(int(f[1].rsplit(":", 1)[1], 16))
    return ports


def remote_pid(stderr_path: Path) -> int | None:
    try:
        m = _REMOTE_PID.search(stderr_path.read_text(errors="replace"))
    except OSError:
        return None
    return int(m.group(1)) if m else None


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
