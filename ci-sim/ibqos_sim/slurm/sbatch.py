"""Submit a sweep as one job array and watch it, with sbatch, squeue and sacct run through
the one subprocess module (ibqos.proc). The clients find the cluster as they always do
(SLURM_CONF, /etc/slurm/slurm.conf); nothing here knows a controller's address."""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ibqos.errors import ExternalError, InputError, ProcessError
from ibqos.proc import run_command

from . import jobdir

# what submit sets and reads back: the array's size, where task logs go, the job ID's format
_OURS = ("--array", "--output", "--parsable", "--wrap")


def _ours(arg: str) -> bool:
    """Whether sbatch reads `arg` as one of _OURS: its getopt_long takes a long option's
    unambiguous prefix (`--arr=0-3`, `--out=x`) and a short one's value attached (`-o/x`,
    `-a0-3`); only the whole names and `-a`, `-o` alone were refused, and these replaced the
    array or the logs the merge names."""
    if arg.startswith("--"):
        name = arg.split("=")[0]
        return len(name) > 3 and any(o.startswith(name) for o in _OURS)
    return arg[:2] in ("-a", "-o")


@dataclass
class SlurmOptions:
    partition: str | None = None
    time: str | None = None  # per task, Slurm's format (MM, HH:MM:SS, D-HH)
    account: str | None = None
    extra: list[str] = field(default_factory=list)  # given to sbatch as they are

    @classmethod
    def parse(cls, partition, time_limit, account, opts: tuple[str, ...]) -> SlurmOptions:
        extra = []
        for o in opts:
            try:
                extra += shlex.split(o)
            except ValueError as e:
                raise InputError(f"{o!r}: {e}", field="--slurm-opt") from e
        bad = [x for x in extra if _ours(x)]
        if bad:
            raise InputError(f"{bad[0]}: ibqos sets this itself", field="--slurm-opt")
        return cls(partition, time_limit, account, extra)

    def args(self) -> list[str]:
        out = [f"--partition={self.partition}"] * bool(self.partition)
        out += [f"--time={self.time}"] * bool(self.time) + [f"--account={self.account}"] * bool(self.account)
        return out + self.extra


def submit(root: Path, n: int, opts: SlurmOptions, name: str = "ibqos-sweep") -> str:
    """The array's job ID. One task per point, one CPU each (unless the options say more)."""
    cmd = [
        "sbatch",
        "--parsable",
        f"--array=0-{n - 1}",
        f"--job-name={name}",
        # sbatch expands %-patterns in the whole --output path: a job directory of `sweep%j`
        # became `sweep<job id>`, no such directory, and every task failed without a log
        f"--output={str(root / 'logs').replace('%', '%%')}/%A_%a.out",
        f"--chdir={root}",
        "--cpus-per-task=1",
        *opts.args(),
        str(root / "job.sh"),
    ]
    job = run_command(cmd, timeout=60).stdout.strip().split(";")[0]  # "ID" or "ID;cluster"
    if not job.isdigit():
        raise ExternalError(f"sbatch answered {job!r}, not a job ID")
    jobdir.save_job_id(root, job)
    return job


def queued(job: str) -> list[str]:
    """The states (PENDING, RUNNING, ...) of the array's tasks still in the queue."""
    cp = run_command(["squeue", "--noheader", "--array", f"--jobs={job}", "--format=%T"], timeout=60, check=False)
    if cp.returncode != 0:
        if "Invalid job id" in cp.stderr:  # finished and purged from the controller
            return []
        raise ExternalError(f"squeue exited with {cp.returncode}: {cp.stderr.strip()}")
    return cp.stdout.split()


def task_states(job: str) -> dict[int, str]:
    """Array task -> final state from sacct; empty where the cluster keeps no accounting."""
    try:
        cp = run_command(["sacct", "--noheader", "--parsable2", f"--jobs={job}", "--format=JobID,State"], check=False)
    except ProcessError:  # no sacct on this host: the logs still say what happened
        return {}
    out = {}
    for line in cp.stdout.splitlines() if cp.returncode == 0 else []:
        jid, _, state = line.partition("|")
        if jid.startswith(f"{job}_") and jid[len(job) + 1 :].isdigit():
            out[int(jid[len(job) + 1 :])] = state.split()[0] if state else ""
    return out


def wait(root: Path, job: str, n: int, tick: Callable[[int], None], poll_s: float = 2.0) -> None:
    """Until no task of the array is queued; tick(points with a result) on every poll."""
    while True:
        busy = queued(job)
        tick(len(jobdir.finished(root, n)))
        if not busy:
            return
        time.sleep(poll_s)


def missing_report(root: Path, job: str | None, n: int) -> str:
    """Which points have no result, with their state (sacct) and log."""
    done = set(jobdir.finished(root, n))
    lost = [i for i in range(n) if i not in done]
    states = task_states(job) if job else {}
    parts = []
    for i in lost[:5]:
        log = jobdir.task_log(root, job, i)
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
        state = states.get(i, "no result")
        parts.append(f"point {i} ({state}; {log}{': ' + tail[0] if tail else ''})")
    more = f" and {len(lost) - 5} more" if len(lost) > 5 else ""
    return f"{len(lost)} of {n} points have no result: " + "; ".join(parts) + more
