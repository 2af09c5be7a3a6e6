"""opensm.conf as OpenSM reads it: `key value` lines, `#` comments, the last occurrence wins."""

from __future__ import annotations

import re

_KV = re.compile(r"^\s*([A-Za-z0-9_]+)(?:\s+(.*?))?\s*$")


def parse(text: str) -> dict[str, str]:
    out = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0]
        m = _KV.match(line)
        if m:
            out[m.group(1)] = (m.group(2) or "").strip()
    return out


def merge(base: str, updates: dict[str, str], banner: str) -> str:
    """The admin's file with `updates` applied: a key already set is changed in place (so the
    admin's layout and comments stay), a new key is appended under a banner."""
    seen = set()
    lines = []
    for line in base.splitlines():
        m = _KV.match(line.split("#", 1)[0])
        if m and m.group(1) in updates:
            key = m.group(1)
            if key in seen:
                continue  # drop later duplicates: the merged value is the one
            seen.add(key)
            lines.append(f"{key} {updates[key]}")
        else:
            lines.append(line)
    new = [k for k in updates if k not in seen]
    if new:
        lines += ["", f"# ---- {banner}"] + [f"{k} {updates[k]}" for k in new]
    return "\n".join(lines) + "\n"
