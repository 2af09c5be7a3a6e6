"""A file tree as data, to prove a command wrote nothing: every path under a root with its
kind, mode, mtime (ns) and content hash (files) or target (symlinks). Directories carry their
mtime too, so an entry created and removed again still shows. Used by test_apply_preview.py
and by debian_unit_scenario.py (inside its mount namespace)."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path


def snapshot(root: Path, skip: tuple[str, ...] = ()) -> dict[str, tuple]:
    out: dict[str, tuple] = {}
    if not os.path.lexists(root):
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        for name in ("", *dirnames, *filenames):
            p = Path(dirpath) / name if name else Path(dirpath)
            rel = str(p.relative_to(root))
            if rel in skip:
                continue
            st = p.lstat()
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p), st.st_mtime_ns)
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", mode, st.st_mtime_ns)
            else:
                out[rel] = ("file", mode, st.st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def changes(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    """What differs, one short line per path (empty: byte-identical)."""
    return [
        f"{k}: {before.get(k)} -> {after.get(k)}"
        for k in sorted(set(before) | set(after))
        if before.get(k) != after.get(k)
    ]
