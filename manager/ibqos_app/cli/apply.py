"""`ibqos apply PLAN (--service opensm@GUID | --opensm-conf PATH --pid PID|--pidfile F) [--dry-run]`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from ibqos.errors import InputError

from ..apply.run import Apply
from ._target import config_options, make_request, sm_options


@click.command()
@click.argument("plan", type=click.Path(dir_okay=False, path_type=Path))
@config_options
@click.option(
    "--init-conf",
    is_flag=True,
    help="With --service: create the unit's missing opensm.conf from OpenSM's defaults "
    "and the plan, then stop (restart the unit, then apply again).",
)
@click.option(
    "--qos-policy",
    type=click.Path(dir_okay=False, path_type=Path),
    help="QoS policy file path (default: the conf's qos_policy_file).",
)
@sm_options
@click.option(
    "--standby",
    is_flag=True,
    help="On a standby SM's host: write the plan's version into its ibqos.d/ (validated, swapped "
    "atomically) without SIGHUP or read-back; it takes effect when that SM becomes master.",
)
@click.option(
    "--accept-edits",
    is_flag=True,
    help="Build on a current version whose files were changed by hand (what the plan does not set is kept).",
)
def apply(plan: Path, **kw: Any) -> None:
    """Apply a plan to a running OpenSM: validate, swap the files atomically, SIGHUP, wait for
    the heavy sweep, read the fabric back and verify it equals the plan; on any failure
    restore the previous files and prove the fabric is back as it was. An apply killed half-way
    is finished or rolled back first, from its journal in ibqos.d/. An unchanged plan writes
    nothing; `ibqos history` lists the versions, `ibqos rollback` returns to one."""
    if kw["init_conf"] and not kw["service"]:
        raise InputError("--init-conf needs --service", field="--init-conf")
    try:
        req = make_request(plan, **kw)
    except KeyboardInterrupt as e:  # e.g. while finding libumad2sim: nothing begun
        Apply.say_not_begun(e, click.echo)
        raise
    state = Apply(req, echo=click.echo).run()
    if kw["init_conf"] or kw["dry_run"] or state.unchanged:
        return
    if kw["standby"]:
        click.echo(f"staged {plan} as {state.version} for the standby SM (plan sha256 {state.plan_sha256}): not swept")
    else:
        click.echo(f"applied {plan} as {state.version}: the fabric equals the plan")
