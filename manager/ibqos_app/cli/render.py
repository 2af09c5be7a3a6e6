"""`ibqos render PLAN -o DIR`: opensm.conf, qos-policy.conf and the plugin table file."""

from __future__ import annotations

from pathlib import Path

import click
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
    help="Directory for the three files (created; existing files are replaced).",
)
def render(plan_path: Path, out: Path) -> None:
    """Render PLAN to OpenSM options, an OpenSM QoS policy and the dla plugin's tables."""
    plan = load_plan(plan_path)
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a directory", file=out)
    for name, path in render_plan(plan, out).items():
        click.echo(f"{name:20s} {path}")
