"""Reading and writing ibqos's own JSON documents (plans, run plans, results): one way to
turn a bad file into one InputError line, and one way to write a file whole or not at all."""

from __future__ import annotations

import io
import json
import os
import tempfile
from pathlib import Path
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import pydantic

from .errors import InputError
from .inputfile import read_text

M = TypeVar("M", bound=pydantic.BaseModel)


def read_json(path: str | Path, *, hint: str = "") -> Any:
    try:
        text = read_text(path)
    except InputError as e:
        raise InputError(e.detail + (f" ({hint})" if hint else ""), file=path) from e
    try:
        return json.loads(text, parse_constant=_no_constant(path))
    except json.JSONDecodeError as e:
        raise InputError(f"not JSON: {e.msg}", file=path, line=e.lineno) from e


def _no_constant(path: str | Path) -> Callable[[str], NoReturn]:
    """JSON has no Infinity or NaN; Python's json accepts them unless told not to."""

    def refuse(name: str) -> NoReturn:
        raise InputError(f"not JSON: {name} is not a number JSON allows", file=path)

    return refuse


def validate(cls: type[M], doc: Any, path: str | Path) -> M:
    """The document as `cls`, or its first schema error as one line naming the field."""
    try:
        return cls.model_validate(doc)
    except pydantic.ValidationError as e:
        err = e.errors()[0]
        raise InputError(err["msg"], file=path, field=".".join(str(p) for p in err["loc"]) or None) from e


def default_mode(directory: bool = False) -> int:
    """What open() or mkdir() would give: 0666 or 0777 less the umask (mkstemp and mkdtemp
    give 0600 and 0700, which would hide an output from everyone but its writer)."""
    mask = os.umask(0)
    os.umask(mask)
    return (0o777 if directory else 0o666) & ~mask


def write_atomic(path: str | Path, data: str | bytes, *, mode: int | None = None) -> None:
    """The one way ibqos writes a file (plans, fabric models, reports, results, configuration):
    a temp file in the same directory, fsynced, renamed over `path`, then the directory
    fsynced, so a reader or a crash sees the old bytes or the new, never part of a file. The
    file gets `mode`, else the mode of the file it replaces, else the umask's default."""
    path = Path(path)
    if mode is None:
        try:
            mode = path.stat().st_mode & 0o7777
        except OSError:
            mode = default_mode()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_json(path: str | Path, doc: Any, *, indent: int | None = 1, allow_nan: bool = True) -> None:
    """`doc` as JSON, written atomically; compact when `indent` is None. allow_nan=False
    refuses NaN and Infinity (JSON has neither) instead of writing them."""
    seps = (",", ":") if indent is None else None
    write_atomic(path, json.dumps(doc, indent=indent, separators=seps, allow_nan=allow_nan) + "\n")


def write_figure(fig: Any, path: str | Path, **savefig: Any) -> Path:
    """A matplotlib figure as an image file (format from the suffix), written atomically."""
    path = Path(path)
    buf = io.BytesIO()
    fig.savefig(buf, format=path.suffix.lstrip(".") or "png", **savefig)
    write_atomic(path, buf.getvalue())
    return path


def fsync_dir(path: str | Path) -> None:
    """Make a directory's entries (a rename into it) durable."""
    dfd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
