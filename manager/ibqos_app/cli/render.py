"""`ibqos render PLAN -o DIR`: opensm.conf, qos-policy.conf and the plugin table file."""

from __future__ import annotations

import os
from pathlib import Path

import click
from ibqos import osmconf
from ibqos.apply.service import is_whole_conf
from ibqos.errors import InputError
from ibqos.outpath import OUT_DIR
from ibqos.plan import load_plan
from ibqos.render import render_plan


@click.command()
@click.argument("plan_path", metavar="PLAN", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    "out",
    required=True,
    type=OUT_DIR,
    help="Directory for the three files (created; existing files are replaced, except OpenSM's whole "
    "opensm.conf or a link, which are refused: merge with 'ibqos apply').",
)
def render(plan_path: Path, out: Path) -> None:
    """Render PLAN to OpenSM options, an OpenSM QoS policy and the dla plugin's tables."""
    plan = load_plan(plan_path)
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a directory", file=out)
    _keep_opensms_own(out / "opensm.conf")
    for name, path in render_plan(plan, out).items():
        click.echo(f"{name:20s} {path}")


def _keep_opensms_own(conf: Path) -> None:
    """The rendered opensm.conf is a fragment of a few dozen options, to merge: written over
    OpenSM's whole configuration (`ibqos render PLAN -o /etc/opensm`) it replaced every site
    option (guid, sm_priority, m_key, ...), which OpenSM would lose at its next start; over a
    link (into ibqos.d/, or config management's) it changed what OpenSM reads behind `apply`."""
    if conf.is_symlink():
        raise InputError(
            f"a symlink to {os.path.realpath(conf)}: rendering here would replace what OpenSM reads; "
            "'ibqos apply PLAN' changes a managed configuration, or render to another directory",
            file=conf,
        )
    if conf.is_file() and is_whole_conf(osmconf.read(conf)):
        raise InputError(
            "is OpenSM's whole configuration, and render writes a fragment of the plan's options in "
            "its place: 'ibqos apply PLAN --opensm-conf' merges the plan into it, or render to another "
            "directory and merge by hand",
            file=conf,
        )
