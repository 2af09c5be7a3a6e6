"""The click parameter type of every output path: an empty string names nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click


class OutPath(click.Path):
    """click.Path that refuses '' instead of reading it as the current directory (where
    `render -o ''` used to write its files)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail("an empty path names no file or directory", param, ctx)
        return super().convert(value, param, ctx)


OUT_DIR = OutPath(file_okay=False, path_type=Path)
OUT_FILE = OutPath(dir_okay=False, path_type=Path)
