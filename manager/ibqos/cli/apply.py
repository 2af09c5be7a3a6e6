"""`ibqos apply PLAN (--service opensm@GUID | --opensm-conf PATH --pid PID|--pidfile F) [--dry-run]`."""

from __future__ import annotations

import os
from pathlib import Path

import click

from .. import paths


@click.command()
@click.argument("plan", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--service",
    metavar="opensm@GUID",
    help="Debian's per-port unit: the config, log file and PID come from its ExecStart "
    "(instead of --opensm-conf and --pid).",
)
@click.option(
    "--init-conf",
    is_flag=True,
    help="With --service: create the unit's missing opensm.conf from OpenSM's defaults "
    "and the plan, then stop (restart the unit, then apply again).",
)
@click.option(
    "--opensm-conf",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The opensm.conf the running OpenSM was started with (-F).",
)
@click.option(
    "--qos-policy",
    type=click.Path(dir_okay=False, path_type=Path),
    help="QoS policy file path (default: the conf's qos_policy_file).",
)
@click.option("--pid", type=int, help="PID of the running OpenSM.")
@click.option("--pidfile", type=click.Path(dir_okay=False, path_type=Path), help="File holding that PID.")
@click.option("--dry-run", is_flag=True, help="Print the file diffs and change nothing.")
@click.option(
    "--standby",
    is_flag=True,
    help="On a standby SM's host: write the plan's version into its ibqos.d/ (validated, swapped "
    "atomically) without SIGHUP or read-back; it takes effect when that SM becomes master.",
)
@click.option("--timeout", default=120.0, show_default=True, help="Seconds to wait for the heavy sweep.")
@click.option(
    "--keep",
    type=click.IntRange(1, 1000),
    default=10,
    show_default=True,
    help="Configuration versions kept in ibqos.d/ (older ones are deleted).",
)
@click.option(
    "--lock-timeout",
    type=click.FloatRange(0, 86400),
    default=600,
    show_default=True,
    help="Seconds to wait for another apply of the same configuration to finish.",
)
@click.option(
    "--sim-socket",
    metavar="NAME",
    help="Read the fabric back through ibsim's socket NAME (testing on a simulated fabric).",
)
def apply(
    plan: Path,
    service: str | None,
    init_conf: bool,
    opensm_conf: Path | None,
    qos_policy: Path | None,
    pid: int | None,
    pidfile: Path | None,
    dry_run: bool,
    standby: bool,
    timeout: float,
    keep: int,
    lock_timeout: float,
    sim_socket: str | None,
) -> None:
    """Apply a plan to a running OpenSM: validate, swap the files atomically, SIGHUP, wait for
    the heavy sweep, read the fabric back and verify it equals the plan; on any failure
    restore the previous files and prove the fabric is back as it was. An apply killed half-way
    is finished or rolled back first, from its journal in ibqos.d/."""
    from ..apply.run import Apply, ApplyRequest
    from ..errors import InputError

    if service and (opensm_conf or pid is not None or pidfile):
        raise InputError("--service finds the config and the PID itself: drop --opensm-conf/--pid", field="--service")
    if not service and not opensm_conf:
        raise InputError("give --service opensm@GUID or --opensm-conf PATH", field="--opensm-conf")
    if init_conf and not service:
        raise InputError("--init-conf needs --service", field="--init-conf")
    env = None
    if sim_socket:
        env = dict(os.environ, IBSIM_SOCKNAME=sim_socket, LD_PRELOAD=str(paths.umad2sim_lib()))
    req = ApplyRequest(
        plan_path=plan,
        opensm_conf=opensm_conf,
        qos_policy=qos_policy,
        pid=pid,
        pidfile=pidfile,
        dry_run=dry_run,
        standby=standby,
        env=env,
        sweep_timeout=timeout,
        keep=keep,
        lock_timeout=lock_timeout,
        service=service,
        init_conf=init_conf,
    )
    state = Apply(req, echo=click.echo).run()
    if init_conf:
        return
    if standby:
        click.echo(f"staged {plan} as {state.version} for the standby SM (plan sha256 {state.plan_sha256}): not swept")
    elif not dry_run:
        click.echo(f"applied {plan} as {state.version}: the fabric equals the plan")
