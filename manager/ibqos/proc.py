"""The one subprocess module: every child ibqos starts goes through here.

Children get their own session so a timeout or Ctrl-C kills the whole process
group; daemons write to files, never to pipes that nobody drains.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ProcessError
from .interrupt import Interrupted, held, pending

log = logging.getLogger("ibqos.proc")


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def run_command(
    cmd: list[str],
    *,
    env: dict[str, str] | None = None,
    timeout: float = 60,
    cwd: str | Path | None = None,
    check: bool = True,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run to completion, capturing output. Raises ProcessError on timeout or (with check) rc != 0."""
    log.debug("run: %s", " ".join(map(str, cmd)))
    p = _spawn(
        f"cannot run {cmd[0]}",
        cmd,
        env=env,
        cwd=cwd,
        text=True,
        # a child's bytes that are not UTF-8 (OpenSM echoing a Latin-1 value of opensm.conf)
        # are kept as they were, never an error: osmconf.to_bytes gives them back
        errors="surrogateescape",
        stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        out, err = p.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        _killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        raise ProcessError(f"{cmd[0]} timed out after {timeout:g} s", cmd=cmd, output=_tail(out + err)) from exc
    except BaseException:
        _killpg(p.pid, signal.SIGKILL)
        p.wait()
        raise
    cp = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    if check and p.returncode != 0:
        raise ProcessError(
            f"{cmd[0]} exited with {p.returncode}: {_tail(err or out, 3)}",
            cmd=cmd,
            returncode=p.returncode,
            output=_tail(out + err),
        )
    return cp


def _spawn(cannot: str, cmd: list[str], **popen: Any) -> subprocess.Popen[Any]:
    """Popen in a session of its own. A signal from the fork to Popen's return would raise where
    nothing holds the child yet, and it would outlive ibqos: the signal waits for the return,
    then the child is killed by its group and the signal raised."""
    before = pending()
    with held():
        try:
            p = subprocess.Popen([str(c) for c in cmd], start_new_session=True, **popen)
        except OSError as e:
            raise ProcessError(f"{cannot}: {e.strerror}", cmd=cmd) from e
    came = pending()
    if came is not None and before is None:
        _killpg(p.pid, signal.SIGKILL)
        p.wait()
        raise Interrupted(came)
    return p


def _killpg(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_group(pid: int, alive: Callable[[], bool], *, grace: float) -> None:
    """Stop a daemon started earlier (by another ibqos process: `fabric up`) and known only by
    PID, with its children: SIGTERM to its process group, SIGKILL after `grace` s. start_daemon
    makes every child a session leader, so its group is its PID; a PID that leads no group
    (not ours) gets the signal alone, so no stranger's group is ever signalled. `alive` says
    whether the PID is still the daemon (a recycled PID is not)."""
    try:
        leader = os.getpgid(pid) == pid
    except ProcessLookupError:
        return

    def signal_it(sig: int) -> None:
        if leader:
            _killpg(pid, sig)
        else:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    signal_it(signal.SIGTERM)
    try:
        wait_until(lambda: not alive(), timeout=grace, what=f"pid {pid} to exit")
    except ProcessError:
        signal_it(signal.SIGKILL)


@dataclass
class Daemon:
    """A long-running child whose output goes to a file. Stopped by PID (its process group)."""

    name: str
    popen: subprocess.Popen[str]  # its one pipe, if any, is the console's stdin: text
    log_path: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def ended(self) -> str | None:
        """How it ended ("exited with 255", "killed by SIGKILL"); None while it runs."""
        rc = self.popen.poll()
        if rc is None:
            return None
        if rc >= 0:
            return f"exited with {rc}"
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:  # a real-time signal has no name
            return f"killed by signal {-rc}"

    def stop(self, grace: float = 3.0) -> int | None:
        if self.popen.poll() is None:
            _killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                _killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
        if self.popen.stdin:
            try:
                self.popen.stdin.close()
            except OSError:
                pass
        return self.popen.returncode

    def send(self, line: str) -> None:
        """Write one line to the daemon's stdin (ibsim's console)."""
        if not self.popen.stdin:
            raise ProcessError(f"{self.name} was started without a console")
        self.popen.stdin.write(line.rstrip("\n") + "\n")
        self.popen.stdin.flush()


def start_daemon(
    name: str,
    cmd: list[str],
    *,
    log_path: Path,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    console: bool = False,
    stderr_path: Path | None = None,
) -> Daemon:
    """stderr goes to log_path too unless stderr_path is given (callers that classify errors)."""
    log.debug("start %s: %s", name, " ".join(map(str, cmd)))
    # the daemon's own files: closed here once it holds them, or if it does not start
    fh = open(log_path, "ab", buffering=0)  # noqa: SIM115
    eh = open(stderr_path, "ab", buffering=0) if stderr_path is not None else None  # noqa: SIM115
    try:
        p = _spawn(
            f"cannot start {name} ({cmd[0]})",
            cmd,
            env=env,
            cwd=cwd,
            stdin=subprocess.PIPE if console else subprocess.DEVNULL,
            stdout=fh,
            stderr=eh if eh is not None else subprocess.STDOUT,
            text=console or None,
        )
    finally:
        fh.close()
        if eh is not None:
            eh.close()
    return Daemon(name, p, log_path)


def proc_stat(pid: int) -> tuple[str, int] | None:
    """(state letter, parent PID) from /proc/<pid>/stat, or None when there is no such process.
    The command name may hold spaces and parentheses, so fields are read after the last ')'."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def pid_alive(pid: int) -> bool:
    """Running, not a zombie waiting to be reaped."""
    st = proc_stat(pid)
    return st is not None and st[0] != "Z"


def wait_until(pred: Callable[[], object], *, timeout: float, interval: float = 0.05, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise ProcessError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)
