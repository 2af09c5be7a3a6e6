"""`ibqos history (--service opensm@GUID | --opensm-conf PATH) [--json]`."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click
from ibqos.apply.confset import ConfigSet, state_dir_for
from ibqos.apply.history import rows
from ibqos.errors import VerificationFailed
from ibqos.term import console, literal, print_table
from rich.table import Table

from ._target import conf_of, config_options


@click.command()
@config_options
@click.option("--json", "as_json", is_flag=True, help="One JSON document (a list of versions) on stdout.")
def history(service: str | None, opensm_conf: Path | None, as_json: bool) -> None:
    """List the stored configuration versions of one OpenSM: when, which plan (sha256 of its
    plan.json), who (SUDO_USER or the login name) and how it ended (verified, rolled back,
    original). A version changed by hand since ibqos wrote it is named in one line (exit 1)."""
    cs = ConfigSet({}, state_dir_for(conf_of(service, opensm_conf)))
    found = rows(cs)
    if as_json:
        click.echo(json.dumps(found, indent=1))
    else:
        if not found:
            click.echo(f"{cs.state}: no versions (not managed by ibqos apply yet)")
        t = Table(title=literal(f"configuration versions in {cs.state}"))
        for col in ("version", "time", "plan sha256", "who", "result", "note"):
            t.add_column(col)
        for r in found:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["time"])) if r["time"] else "?"
            note = ", ".join(
                n
                for n in (
                    "current" if r["current"] else "",
                    "the admin's original files" if r["original"] else "",
                    f"rollback to {r['rollback_of']}" if r["rollback_of"] else "",
                    "TAMPERED" if r["tampered"] else "",
                )
                if n
            )
            t.add_row(r["version"], when, (r["plan_sha256"] or "–")[:16], r["who"] or "?", r["result"], note)
        if found:
            print_table(console(), t)
    bad = [cs.tamper_line(r["version"]) for r in found if r["tampered"] and not r["current"]] + [cs.damage_line()]
    bad = [line for line in bad if line]
    if bad:
        for line in bad[:-1]:
            click.echo(line, err=True)
        raise VerificationFailed(bad[-1])
