"""The man pages and the bash completion of the `ibqos` command, generated from the CLI itself
at build time (`make install`, `make deb`): OUTDIR/man1/ibqos.1 and one ibqos-<command>.1 per
command and subcommand (click-man), and OUTDIR/bash-completion/ibqos, the script
`_IBQOS_COMPLETE=bash_source ibqos` prints (click's).

Usage: python scripts/cli_docs.py OUTDIR (with the checkout's .venv, which has click-man)."""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import sys
from pathlib import Path

import click
from click.shell_completion import BashComplete
from click_man.core import write_man_pages
from ibqos_app.cli._main import cli


def with_every_command(group: click.Group) -> click.Group:
    """The group with each command attached: `ibqos` loads its commands from entry points only
    when one runs (LazyGroup), and click-man walks `group.commands`."""
    ctx = click.Context(group, info_name="ibqos")
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is not None:
            group.add_command(command, name)
    return group


def main(outdir: Path) -> None:
    man1 = outdir / "man1"
    man1.mkdir(parents=True, exist_ok=True)
    # the date of the sources, not of the build, where the build says it (debhelper does)
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = datetime.datetime.fromtimestamp(int(epoch), datetime.UTC) if epoch else datetime.datetime.now(datetime.UTC)
    write_man_pages(
        "ibqos",
        with_every_command(cli),
        version=importlib.metadata.version("ibqos"),
        target_dir=str(man1),
        date=when.strftime("%Y-%m-%d"),
    )
    completion = outdir / "bash-completion"
    completion.mkdir(parents=True, exist_ok=True)
    (completion / "ibqos").write_text(BashComplete(cli, {}, "ibqos", "_IBQOS_COMPLETE").source())


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: cli_docs.py OUTDIR")
    main(Path(sys.argv[1]))
