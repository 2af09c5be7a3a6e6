"""The click parameter type of every output path: an empty string names nothing, and an
existing path must be what the option writes (a directory, or a regular file)."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import click


class OutPath(click.Path):
    """click.Path that refuses '' instead of reading it as the current directory (where
    `render -o ''` used to write its files)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail("an empty path names no file or directory", param, ctx)
        if value == "-":
            # the usual 'standard output': `plan -o - | jq` wrote a file named '-' and piped
            # the table; a file of that name is still `./-`
            self.fail("'-' is not standard output here: name a file or directory (./- for one called '-')", param, ctx)
        # click refuses only a regular file where a directory is wanted. A device, FIFO or
        # socket must be refused too: the atomic writer renames over its path, and as root
        # `-o /dev/null` replaced the device node with a regular file.
        try:
            mode = Path(value).stat().st_mode
        except (OSError, TypeError, ValueError):
            mode = None
        if mode is not None and not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
            what = "is not a directory" if not self.file_okay else "is not a regular file"
            self.fail(f"{click.format_filename(value)!r} {what}", param, ctx)
        return super().convert(value, param, ctx)


OUT_DIR = OutPath(file_okay=False, path_type=Path)
OUT_FILE = OutPath(dir_okay=False, path_type=Path)


def same_file(a: Any, b: Any) -> bool:
    """Whether paths `a` and `b` are one file (a link to it too); False when either is not there
    (yet), or no path."""
    try:
        return Path(a).samefile(b)
    except (OSError, TypeError, ValueError):
        return False


def refuse_outputs_onto_inputs(ctx: click.Context) -> None:
    """An output file that is one of the command's input files (the same path, or a link to
    it) is refused before anything runs: `plan policy.yaml -o policy.yaml` replaced the
    policy with its plan. Inputs are the command's other path parameters."""
    params = [(p, ctx.params.get(p.name or "")) for p in ctx.command.params if isinstance(p.type, click.Path)]
    outputs = [(p, v) for p, v in params if isinstance(p.type, OutPath) and p.type.file_okay and v]
    inputs = [(p, v) for p, v in params if not isinstance(p.type, OutPath) and v]
    for out, out_path in outputs:
        for inp, in_path in inputs:
            if same_file(out_path, in_path):
                name = inp.human_readable_name if isinstance(inp, click.Option) else inp.human_readable_name.upper()
                raise click.BadParameter(
                    f"{click.format_filename(out_path)!r} is also the file {name} reads: writing it would replace it",
                    ctx=ctx,
                    param=out,
                )
