"""`ibqos demo`: the dry run on the embedded default (examples/four-class.yaml, 72-CA dragonfly)."""

from __future__ import annotations

import click
from ibqos.paths import REPO_ROOT

from .dryrun import dryrun


@click.command()
@click.option("--out", default="runs/demo", show_default=True)
@click.pass_context
def demo(ctx: click.Context, out: str) -> None:
    """The dry run of the example 4-class policy on a 72-node dragonfly in ibsim."""
    ctx.invoke(
        dryrun,
        policy=REPO_ROOT / "examples" / "four-class.yaml",
        topology="df72",
        net=None,
        traffic="uniform",
        out=REPO_ROOT / out,
        sim_time_us=200.0,
        seed=1,
    )
