"""The options that name one OpenSM configuration and how to reach the SM, shared by `apply`,
`rollback` and `history`, and the one function that turns them into an ApplyRequest."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
from ibqos import paths
from ibqos.apply.service import resolve
from ibqos.errors import InputError

from ..apply.run import ApplyRequest
from ._numbers import FiniteFloat

if TYPE_CHECKING:
    from ..apply.run import ApplyRequest

F = TypeVar("F", bound=Callable[..., Any])  # a click command's function, options added


def named_conf(ctx: click.Context, param: click.Parameter, opensm_conf: Path | None) -> Path | None:
    """--opensm-conf, as the admin typed it, names something: a path with nothing there is a
    typo, refused (exit 2), never read as a configuration 'not managed yet' (exit 0 forever
    to a monitoring check). A dangling link stays: it is a managed path whose version is gone
    (BROKEN), which status and history name. (A unit's own path may be missing: OpenSM then
    runs on its defaults.)"""
    if opensm_conf is not None and not os.path.lexists(opensm_conf):
        raise InputError("no such file", file=opensm_conf, field="--opensm-conf")
    return opensm_conf


def positive_pid(ctx: click.Context, param: click.Parameter, pid: int | None) -> int | None:
    """--pid names one process: 0 or below names none (kill(2) would signal a process group
    or every process), refused as unusable input (exit 2), before anything is looked up."""
    if pid is not None and pid <= 0:
        raise InputError(f"{pid} is not a process ID: give the running OpenSM's (above 0)", field="--pid")
    return pid


def sweep_seconds(ctx: click.Context, param: click.Parameter, seconds: float) -> float:
    """--timeout for a heavy sweep: a number of seconds above 0, at most a day. `nan` passed
    click's float, and a wait whose deadline is nan never ends (proc.wait_until)."""
    if not 0 < seconds <= 86400:
        raise InputError(f"{seconds:g} is not a number of seconds from above 0 to 86400", field="--timeout")
    return seconds


def config_options(f: F) -> F:
    """--service or --opensm-conf: which configuration (all three commands)."""
    f = click.option(
        "--opensm-conf",
        type=click.Path(dir_okay=False, path_type=Path),
        callback=named_conf,
        help="The opensm.conf the running OpenSM was started with (-F).",
    )(f)
    return click.option(
        "--service",
        metavar="opensm@GUID",
        help="Debian's per-port unit: the config, log file and PID come from its ExecStart "
        "(instead of --opensm-conf and --pid).",
    )(f)


def sm_options(f: F) -> F:
    """How to reach the running OpenSM and what an apply (or rollback) may do."""
    for opt in reversed(
        (
            click.option("--pid", type=int, callback=positive_pid, help="PID of the running OpenSM."),
            click.option("--pidfile", type=click.Path(dir_okay=False, path_type=Path), help="File holding that PID."),
            click.option("--dry-run", is_flag=True, help="Print the file diffs and change nothing."),
            click.option(
                "--timeout",
                default=120.0,
                show_default=True,
                callback=sweep_seconds,
                help="Seconds to wait for the heavy sweep.",
            ),
            click.option(
                "--keep",
                type=click.IntRange(1, 1000),
                default=10,
                show_default=True,
                help="Configuration versions kept in ibqos.d/ (older ones are deleted; the "
                "admin's original files never are).",
            ),
            click.option(
                "--lock-timeout",
                type=FiniteFloat(0, 86400),
                default=600,
                show_default=True,
                help="Seconds to wait for another apply of the same configuration to finish.",
            ),
            click.option(
                "--allow-pkey-removal",
                is_flag=True,
                help="Let the new files drop partitions the fabric carries (their P_Keys go from every port).",
            ),
            click.option(
                "--sim-socket",
                metavar="NAME",
                help="Read the fabric back through ibsim's socket NAME (testing on a simulated fabric).",
            ),
        )
    ):
        f = opt(f)
    return f


def _one_of(service: str | None, opensm_conf: Path | None) -> None:
    if service and opensm_conf:
        raise InputError("--service finds the config itself: drop --opensm-conf", field="--service")
    if not service and not opensm_conf:
        raise InputError("give --service opensm@GUID or --opensm-conf PATH", field="--opensm-conf")


def conf_of(service: str | None, opensm_conf: Path | None) -> Path:
    """The opensm.conf named by --service or --opensm-conf (history needs no PID)."""
    _one_of(service, opensm_conf)
    if service:
        return resolve(service).conf
    assert opensm_conf is not None
    return opensm_conf


def sim_env(sim_socket: str | None) -> dict[str, str] | None:
    if not sim_socket:
        return None
    return dict(os.environ, IBSIM_SOCKNAME=sim_socket, LD_PRELOAD=str(paths.umad2sim_lib()))


def make_request(plan: Path | None, **kw: Any) -> ApplyRequest:
    """An ApplyRequest from the shared options (and apply's or rollback's own)."""
    service, opensm_conf, pid, pidfile = kw["service"], kw["opensm_conf"], kw["pid"], kw["pidfile"]
    if service and (pid is not None or pidfile):
        raise InputError("--service finds the PID itself: drop --pid/--pidfile", field="--service")
    _one_of(service, opensm_conf)
    return ApplyRequest(
        plan_path=plan or Path("-"),
        opensm_conf=opensm_conf or Path("-"),  # with --service: the unit's, found by the apply
        qos_policy=kw.get("qos_policy"),
        pid=pid,
        pidfile=pidfile,
        dry_run=kw["dry_run"],
        env=sim_env(kw["sim_socket"]),
        sweep_timeout=kw["timeout"],
        keep=kw["keep"],
        lock_timeout=kw["lock_timeout"],
        service=service,
        init_conf=kw.get("init_conf", False),
        rollback_to=kw.get("rollback_to"),
        allow_pkey_removal=kw["allow_pkey_removal"],
        accept_edits=kw.get("accept_edits", False),
        standby=kw.get("standby", False),
    )
