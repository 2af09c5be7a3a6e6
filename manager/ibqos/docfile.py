"""Reading and writing ibqos's own JSON documents (plans, run plans, results): one way to
turn a bad file into one InputError line, and one way to write a file whole or not at all."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import json
import json.scanner
import math
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import pydantic

from .errors import InputError
from .inputfile import DEFAULT_LIMIT, MiB, read_text

M = TypeVar("M", bound=pydantic.BaseModel)


# The config of every model a JSON document ibqos writes is read back into (a plan, a fabric
# model, a verdict, a run plan and its results, dla's record). strict: the file is the source,
# so a hand-edited `true`, `32.0` or `"32"` where a number is wanted is a typo to refuse, not a
# value to coerce (pydantic's lax mode read `true` as the VL arbitration weight 1); a float
# field still takes an integer. extra="forbid": an unknown field is a mistake too.
DOCUMENT = pydantic.ConfigDict(extra="forbid", strict=True)


# ibqos's own small documents (a plan, a run plan, a verdict, a state file) are kilobytes to
# a few hundred; read whole past this, a 100 MB file took seconds and half a GB to refuse
SMALL_DOC_LIMIT = 16 * MiB


def read_json(path: str | Path, *, hint: str = "", limit: int = DEFAULT_LIMIT, what: str = "") -> Any:
    return read_json_text(path, hint=hint, limit=limit, what=what)[0]


def read_json_text(path: str | Path, *, hint: str = "", limit: int = DEFAULT_LIMIT, what: str = "") -> tuple[Any, str]:
    """The document and its text (to name the line of a field that fails validation); at
    most `limit` bytes (`what` names the kind of document in the error)."""
    try:
        text = read_text(path, limit=limit, what=what)
    except InputError as e:
        raise InputError(e.detail + (f" ({hint})" if hint else ""), file=path, line=e.line) from e
    return parse_json(text, path), text


def parse_json(text: str, path: str | Path) -> Any:
    """JSON `text` (of the file `path`) as ibqos reads every document: no NaN or Infinity, no
    number beyond a double or of more than MAX_INT_DIGITS digits, not nested without end."""
    try:
        return json.loads(
            text,
            parse_constant=_no_constant(path),
            parse_float=_finite(path, text),
            parse_int=_int(path, text),
            object_pairs_hook=_no_duplicate_keys,
        )
    except _DuplicateKey as e:
        # JSON leaves a key given twice undefined and Python keeps the last: a hand-edited
        # plan's second "vlarb" (or "share_tolerance_pp") was taken silently
        raise InputError(
            f"key {json.dumps(e.key)} given twice in one object (which one counts?)",
            file=path,
            line=_duplicate_line(text, e.key),
        ) from e
    except json.JSONDecodeError as e:
        raise InputError(f"not JSON: {e.msg}", file=path, line=e.lineno) from e
    except RecursionError as e:
        # [[[[...]]]] 100,000 deep: no ibqos document nests more than a few levels
        raise InputError("not JSON ibqos reads: nested too deeply", file=path) from e


class _DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    doc = dict(pairs)
    if len(doc) < len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise _DuplicateKey(k)
            seen.add(k)
    return doc


def _duplicate_line(text: str, key: str) -> int | None:
    """The line of `key`'s second occurrence in the first object that gives it twice (read again
    only for the error, with Python's pure scanner, whose objects say where they start)."""
    where: list[int] = []

    def parse_object(s_and_end: tuple[str, int], *args: Any) -> tuple[Any, int]:
        s, pos = s_and_end
        seen: set[str] = set()
        while not where:
            pos = _WS.match(s, pos).end()  # type: ignore[union-attr]
            if s[pos] != '"':
                break
            k, after = json.decoder.scanstring(s, pos + 1)  # type: ignore[attr-defined]
            if k in seen and k == key:
                where.append(pos)
                break
            seen.add(k)
            pos = _WS.match(s, after).end() + 1  # type: ignore[union-attr]  # past ':'
            _, pos = decoder.scan_once(s, _WS.match(s, pos).end())  # type: ignore[union-attr]
            pos = _WS.match(s, pos).end()  # type: ignore[union-attr]
            if s[pos] != ",":
                break
            pos += 1
        return json.decoder.JSONObject(s_and_end, *args)  # type: ignore[attr-defined,no-any-return]

    decoder: Any = json.JSONDecoder()
    decoder.parse_object = parse_object
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    try:
        decoder.decode(text)
    except (ValueError, IndexError, RecursionError):
        pass
    return text.count("\n", 0, where[0]) + 1 if where else None


def _no_constant(path: str | Path) -> Callable[[str], NoReturn]:
    """JSON has no Infinity or NaN; Python's json accepts them unless told not to."""

    def refuse(name: str) -> NoReturn:
        raise InputError(f"not JSON: {name} is not a number JSON allows", file=path)

    return refuse


# A 64-bit GUID is 20 decimal digits; Python refuses to read an integer of more than 4300
# (ValueError: an internal error before), and none of ibqos's numbers is that long
MAX_INT_DIGITS = 40


def _int(path: str | Path, text: str) -> Callable[[str], int]:
    def parse(s: str) -> int:
        if len(s.lstrip("-")) > MAX_INT_DIGITS:
            k = text.find(s)
            line = text.count("\n", 0, k) + 1 if k >= 0 else None
            raise InputError(
                f"a number of {len(s.lstrip('-'))} digits (at most {MAX_INT_DIGITS})", file=path, line=line
            )
        return int(s)

    return parse


def _finite(path: str | Path, text: str) -> Callable[[str], float]:
    """1e400 is valid JSON that Python reads as infinity; no share, rate or bound is infinite."""

    def parse(s: str) -> float:
        v = float(s)
        if not math.isfinite(v):
            k = text.find(s)
            line = text.count("\n", 0, k) + 1 if k >= 0 else None
            raise InputError(f"number {s} is too large (not a finite double)", file=path, line=line)
        return v

    return parse


class JsonDoc:
    """A JSON document's file and (when kept) its text: where its fields are, for errors that
    name the file, the line and the field (the one owner of that location)."""

    def __init__(self, path: str | Path, text: str | None):
        self.path, self.text = path, text

    def error(self, message: str, *loc: str | int) -> InputError:
        line = field_line(self.text, loc) if self.text is not None else None
        return InputError(message, file=self.path, line=line, field=".".join(map(str, loc)) or None)


def error_message(err: Any) -> str:
    """A pydantic error's message without the prefix pydantic puts before a validator's own
    words ("Value error, port_name: ...")."""
    msg: str = err["msg"]
    for prefix in ("Value error, ", "Assertion failed, "):
        msg = msg.removeprefix(prefix)
    return msg


def option_error(e: pydantic.ValidationError) -> InputError:
    """The first error of a model built from command-line options, naming the option
    (`time_us` is `--time-us`)."""
    err = e.errors()[0]
    return InputError(error_message(err), field="--" + str(err["loc"][0]).replace("_", "-"))


def error_loc(err: Any) -> tuple[str | int, ...]:
    """A pydantic error's location in the document: pydantic adds union-member and validator
    names to it (`rate.float`); drop them."""
    return tuple(
        p
        for p in err["loc"]
        if isinstance(p, int)
        or not (
            p.startswith(("function-", "literal[", "union["))
            or p in ("float", "str", "int", "bool")
            or p.startswith("constrained-")
        )
    )


def validate(cls: type[M], doc: Any, path: str | Path, *, text: str | None = None) -> M:
    """The document as `cls`, or its first schema error as one line naming the field (and,
    given the document's text, its line)."""
    try:
        return cls.model_validate(doc)
    except pydantic.ValidationError as e:
        err = e.errors()[0]
        raise JsonDoc(path, text).error(error_message(err) + got_note(err), *err["loc"]) from e


def got_note(err: Any) -> str:
    """` (got true)`: the value of the wrong type as the document spells it, for a strict
    field's error ('Input should be a valid integer' alone did not say what was there)."""
    value = err.get("input")
    if not err["type"].endswith("_type") or not isinstance(value, (bool, int, float, str)):
        return ""
    shown = json.dumps(value)
    return f" (got {shown if len(shown) <= 40 else shown[:39] + '…'})"


_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def field_line(text: str, loc: tuple[str | int, ...]) -> int | None:
    """The line of the value at `loc` (keys and list indexes) in JSON `text`; for a key that
    is not there, the line of the object that lacks it. None if the text does not say."""
    pos = 0
    try:
        for key in loc:
            pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
            if text[pos] == "{":
                found = _find_key(text, pos + 1, str(key))
                if found is None:
                    break
                pos = found
            elif text[pos] == "[" and str(key).isdigit():
                pos = _nth_item(text, pos + 1, int(key))
            else:
                break
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
    except (IndexError, ValueError):  # JSONDecodeError is a ValueError
        return None
    return text.count("\n", 0, pos) + 1


def _find_key(text: str, pos: int, key: str) -> int | None:
    """Position of the value of `key` in the object whose body starts at `pos`."""
    while True:
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        if text[pos] != '"':
            return None
        k, pos = json.decoder.scanstring(text, pos + 1)  # type: ignore[attr-defined]
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]  # past ':'
        if k == key:
            return pos
        _, pos = _DECODER.raw_decode(text, pos)
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        if text[pos] != ",":
            return None
        pos += 1


def _nth_item(text: str, pos: int, n: int) -> int:
    for _ in range(n):
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        _, pos = _DECODER.raw_decode(text, pos)
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        if text[pos] != ",":
            raise ValueError("fewer items")
        pos += 1
    return pos


def default_mode(directory: bool = False) -> int:
    """What open() or mkdir() would give: 0666 or 0777 less the umask (mkstemp and mkdtemp
    give 0600 and 0700, which would hide an output from everyone but its writer)."""
    mask = os.umask(0)
    os.umask(mask)
    return (0o777 if directory else 0o666) & ~mask


def check_writable(path: Path | None, field: str) -> None:
    """An output file's directory exists and takes new files (write_atomic renames into it),
    checked before the work that produces it rather than after."""
    if path is None:
        return
    shown: Path | str = path
    if path.is_symlink():
        _no_loop(path, field)
        # write_atomic writes the file a link names, in that file's directory: a dangling link
        # into no (or a read-only) directory passed here and failed after the work, before
        path = Path(os.path.realpath(path))
        shown = f"{shown} (a link to {path})"
    d = path.parent
    if not d.is_dir():
        raise InputError(f"{shown}: no directory {d}", field=field)
    if path.is_dir():
        raise InputError(f"{path}: is a directory", field=field)
    if not os.access(d, os.W_OK | os.X_OK):
        raise InputError(f"{shown}: directory {d} is not writable", field=field)


def _no_loop(link: Path, field: str | None = None) -> None:
    """A link that is a loop (a -> b -> a) names no file to write through to, as a dangling
    one does (its file is made): the rename replaced the link itself with a plain file, so a
    `--state` or textfile path an admin linked by mistake was silently cut from where it
    pointed. Refused: OSError(ELOOP) (said as `FILE: Too many levels of symbolic links`), or
    given the option `field`, its InputError."""
    try:
        link.stat()
    except OSError as e:
        if e.errno != errno.ELOOP:
            return
        if field is not None:
            raise InputError(f"{link}: a link that names no file: {e.strerror}", field=field) from e
        raise OSError(e.errno, e.strerror, str(link)) from e


@contextlib.contextmanager
def made_dir(directory: str | Path) -> Iterator[Path]:
    """`directory` made (with the parents it lacks) for what the block writes into it; when
    the block fails (or is interrupted), the directories made here are removed again, as far
    as they are still empty: `simulate --out full/sim` on a full disk left the empty sim/ it
    had made behind, and so did every command that makes its output directory. The one way
    ibqos makes an output directory; a path through a file is bad input."""
    directory = Path(directory)
    made, p = [], directory
    while not os.path.lexists(p) and p != p.parent:
        made.append(p)
        p = p.parent
    try:
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError) as e:
            raise InputError("cannot create its directory: part of the path is a file", file=directory) from e
        yield directory
    except BaseException:
        for d in made:  # deepest first; one that is not empty now is someone else's too
            try:
                d.rmdir()
            except OSError:
                break
        raise


def write_atomic(path: str | Path, data: str | bytes, *, mode: int | None = None) -> None:
    """The one way ibqos writes a file (plans, fabric models, reports, results, configuration):
    a temp file in the same directory, fsynced, renamed over `path`, then the directory
    fsynced, so a reader or a crash sees the old bytes or the new, never part of a file. The
    file gets `mode`, else the mode of the file it replaces, else the umask's default. A path
    that is a symlink writes the file it names (the rename would replace the link: as root,
    `plan -o /dev/stdout > f` replaced /dev/stdout itself)."""
    path = Path(path)
    if path.is_symlink():
        _no_loop(path)
        path = Path(os.path.realpath(path))
    try:
        st = path.stat()
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        # os.replace would put a regular file where a device, FIFO or directory was
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        raise OSError(errno.EEXIST, "exists and is not a regular file", str(path))
    if mode is None:
        mode = st.st_mode & 0o7777 if st is not None else default_mode()
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as e:  # a read-only or full directory: the file asked for, not a temp name
        raise OSError(e.errno, e.strerror, str(path)) from e
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        if e.filename is None:  # write() or fsync() on the fd: ENOSPC, EIO, EDQUOT
            raise OSError(e.errno, e.strerror, str(path)) from e
        raise
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


def write_dir_atomic(out_dir: str | Path, files: dict[str, str]) -> None:
    """Write `files` (name -> text) into `out_dir` as one set: a new directory appears whole
    (a temp directory renamed), an existing one has its files replaced under an exclusive
    lock on it, so two writers at once leave one's set or the other's, never a mix. The parents
    it lacks are made, and removed again when the set cannot be written (made_dir)."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError("exists and is not a directory", file=out_dir)
    with made_dir(out_dir.parent):
        _write_set(out_dir, files)


def _write_set(out_dir: Path, files: dict[str, str]) -> None:
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    except OSError as e:  # a read-only or full directory: the directory asked for, not a temp name
        raise OSError(e.errno, e.strerror, str(out_dir)) from e
    try:
        os.chmod(tmp, default_mode(directory=True))
        for name, text in files.items():
            try:
                (tmp / name).write_text(text)
            except OSError as e:  # a full disk fails the write, which names no file: the one asked for
                raise OSError(e.errno, e.strerror, str(out_dir / name)) from e
            os.chmod(tmp / name, default_mode())
        try:
            os.rename(tmp, out_dir)  # fails when out_dir exists, even if another writer just made it
            return
        except OSError:
            if not out_dir.is_dir():
                raise
        fd = os.open(out_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            for name in files:
                os.replace(tmp / name, out_dir / name)
        finally:
            os.close(fd)  # releases the lock
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
