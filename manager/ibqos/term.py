"""Tables in a terminal, with no number ever cut.

rich squeezes a table that is wider than the terminal by cutting cells to `…`: at 80 columns
`100.00` became `100.…`. Here a table that does not fit is printed as several tables, each
with the key columns (the first, by default: class, VL, role) and as many of the others as
fit whole; every column folds instead of cutting, so a single column wider than the terminal
wraps (at spaces first). `--json` stays the machine interface.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import sys

from rich.console import Console
from rich.table import Column, Table
from rich.text import Text

# A pipe or a log file has no width; it gets lines this long unless COLUMNS says otherwise.
PIPE_WIDTH = 120


def literal(*parts: str | tuple[str, str]) -> Text:
    """Text that rich prints as it is, each part plain text or (text, style): the one way text
    ibqos did not write (node descriptions, file names, the messages that name them) reaches
    rich. rich.markup.escape is not enough: markup still takes `\\[` for an escaped bracket (a
    node description `dual HCA-1 \\[1]` was printed `dual HCA-1 [1]`), escape() doubles a
    trailing backslash, and markup turns `:ok:` into an emoji."""
    return Text.assemble(*parts)


def console(*, stderr: bool = False, pipe_width: int | None = PIPE_WIDTH) -> Console:
    """COLUMNS when set, else the terminal's width, else `pipe_width` (None: rich's 80)."""
    stream = sys.stderr if stderr else sys.stdout
    width = None
    if "COLUMNS" not in os.environ and pipe_width and not stream.isatty():
        width = pipe_width
    return Console(stderr=stderr, width=width)


def print_table(con: Console, table: Table, keys: int = 1) -> None:
    parts = fit(con, table, keys)
    for part in parts:
        con.print(part)
    if len(parts) > 1 and table.caption:
        # below the parts at the full width, not squeezed under the narrowest
        con.print(table.caption, style="dim", justify="center")


def fit(con: Console, table: Table, keys: int = 1) -> list[Table]:
    """`table` as one table if it fits `con` with no word cut (text may wrap at spaces), else
    split by columns, the first `keys` columns repeated in each part."""
    for col in table.columns:
        col.overflow = "fold"
    if _whole(con, table) or len(table.columns) <= keys + 1:
        return [table]
    key_cols, rest = table.columns[:keys], table.columns[keys:]
    groups: list[list[Column]] = [[]]
    for col in rest:
        if groups[-1] and not _whole(con, _part(table, key_cols + groups[-1] + [col])):
            groups.append([col])
        else:
            groups[-1].append(col)
    parts = [_part(table, key_cols + g) for g in groups]
    for i, p in enumerate(parts):
        p.caption = None  # print_table prints it once, below
        if i:
            p.title = "(continued)" if table.title else None
    return parts


def _part(table: Table, cols: list[Column]) -> Table:
    part = copy.copy(table)
    part.columns = [dataclasses.replace(c, _index=i) for i, c in enumerate(cols)]
    part.rows = list(table.rows)
    return part


def _whole(con: Console, table: Table) -> bool:
    """Whether rich lays the table out in `con` with every column at least as wide as its
    longest word (a number is one word): cells then wrap at spaces, never inside a word.
    rich's own layout (private, stable since rich 10) is asked, as it is what will print."""
    opts = con.options.update_width(con.width - table._extra_width)
    widths = table._calculate_column_widths(con, opts)
    mins = [table._measure_column(con, opts, c).minimum for c in table.columns]
    return all(w >= m for w, m in zip(widths, mins, strict=True))
