"""Every file an admin hands ibqos is read here: one regular file (a FIFO or a device is
refused, never waited on), at most a size cap, strictly UTF-8. Anything else is one
InputError line naming the file (`plan.json:2: not UTF-8 (byte 19)`), exit code 2."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from .errors import InputError

MiB = 1024 * 1024
DEFAULT_LIMIT = 512 * MiB  # OpenSM's LFT dump of a 2550-CA fabric is about 110 MB


def _open(path: Path, what: str) -> int:
    """A descriptor of `path` when it is a regular file (a FIFO is never waited on)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError as exc:
        if path.is_symlink():
            raise InputError(f"a link to {os.readlink(path)}, which is not there", file=path) from exc
        raise InputError("no such file", file=path) from exc
    except IsADirectoryError as exc:
        raise InputError("is a directory" + (f", not {what}" if what else ""), file=path) from exc
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", file=path) from e
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise InputError("is a directory" + (f", not {what}" if what else ""), file=path)
        if not stat.S_ISREG(mode):
            raise InputError("not a regular file", file=path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(path: str | Path, *, limit: int = DEFAULT_LIMIT, what: str = "") -> bytes:
    path = Path(path)
    fd = _open(path, what)
    try:
        chunks, size = [], 0
        while size <= limit:
            b = os.read(fd, min(limit + 1 - size, 16 * MiB))
            if not b:
                break
            chunks.append(b)
            size += len(b)
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", file=path) from e
    finally:
        os.close(fd)
    if size > limit:
        raise InputError(f"larger than {_size(limit)}" + (f"; {what} is much smaller" if what else ""), file=path)
    return b"".join(chunks)


def byte_lines(path: str | Path, *, limit: int = DEFAULT_LIMIT, line_max: int = MiB) -> Iterator[bytes]:
    """The file's lines as bytes, each with its newline (the last one without, when the file
    does not end in one), read as they are parsed: a reader that stops at a bad line has read
    no further, and a large file is never held whole (a 300 MB dump was, then decoded: a
    MemoryError in 1 GiB). A line longer than `line_max` is refused at its line."""
    path = Path(path)
    size = no = 0
    with os.fdopen(_open(path, ""), "rb", buffering=MiB) as f:
        while True:
            try:
                line = f.readline(line_max + 1)
            except OSError as e:
                raise InputError(f"cannot read: {e.strerror}", file=path) from e
            if not line:
                return
            size, no = size + len(line), no + 1
            if size > limit:
                raise InputError(f"larger than {_size(limit)}", file=path)
            if len(line) > line_max:
                raise InputError(f"a line longer than {_size(line_max)}", file=path, line=no)
            yield line


def decode(raw: bytes, path: str | Path) -> str:
    """Strict UTF-8 (a leading byte-order mark is dropped)."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        # The line too: an editor finds a byte by its line, not its offset.
        line = raw[: e.start].count(b"\n") + 1
        raise InputError(f"not UTF-8 (byte {e.start})", file=path, line=line) from e


def read_text(path: str | Path, *, limit: int = DEFAULT_LIMIT, what: str = "") -> str:
    return decode(read_bytes(path, limit=limit, what=what), path)


def read_text_hashed(path: str | Path, *, limit: int = DEFAULT_LIMIT, what: str = "") -> tuple[str, str]:
    """The text and the SHA-256 of its bytes (what a plan records of its policy)."""
    raw = read_bytes(path, limit=limit, what=what)
    return decode(raw, path), hashlib.sha256(raw).hexdigest()


def _size(n: int) -> str:
    return f"{n // MiB} MiB" if n >= MiB else f"{n // 1024} KiB"
