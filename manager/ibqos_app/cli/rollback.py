"""`ibqos rollback [VERSION] (--service opensm@GUID | --opensm-conf PATH --pid PID) [--dry-run]`."""

from __future__ import annotations

from typing import Any

import click
from ibqos.apply.confset import ConfigSet, state_dir_for
from ibqos.apply.history import previous_verified
from ibqos.errors import InputError

from ..apply.run import Apply
from ._target import conf_of, config_options, make_request, sm_options


@click.command()
@click.argument("version", required=False)
@config_options
@sm_options
def rollback(version: str | None, **kw: Any) -> None:
    """Re-apply a stored configuration version (default: the previous verified one) exactly as
    `apply` applies a plan: a new version with its files, SIGHUP, heavy sweep, read back,
    checked against that version's plan, and rolled back on any failure. `ibqos history`
    lists the versions."""
    req = make_request(None, **kw)
    if version is None:
        cs = ConfigSet({}, state_dir_for(conf_of(kw["service"], kw["opensm_conf"])))
        version = previous_verified(cs)
        if version is None:
            raise InputError(f"no earlier verified version in {cs.state}: name one ('ibqos history')", field="VERSION")
        click.echo(f"rollback to {version}, the previous verified version")
    req.rollback_to = version
    state = Apply(req, echo=click.echo).run()
    if kw["dry_run"] or state.unchanged:
        return
    click.echo(f"rolled back to {version} as {state.version}: verified")
