"""YAML to plain data, remembering the line of every value (for `file:line: field:` errors)."""

from __future__ import annotations

from pathlib import Path

import yaml

from ..errors import InputError

Path_ = tuple  # a location inside the document: ("classes", 0, "bandwidth")


class Located:
    """Plain data plus a map from locations to 1-based line numbers."""

    def __init__(self, data, lines: dict[Path_, int], file: str):
        self.data, self.lines, self.file = data, lines, file

    def line(self, loc) -> int | None:
        """Line of the value at `loc`, or of its nearest enclosing value."""
        loc = tuple(loc)
        while loc:
            if loc in self.lines:
                return self.lines[loc]
            loc = loc[:-1]
        return self.lines.get((), None)


def load_yaml(path: str | Path) -> Located:
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise InputError("no such file", file=path) from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read: {e.__class__.__name__}", file=path) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        raise InputError(f"YAML syntax: {e.problem or e.context}", file=path,
                         line=mark.line + 1 if mark else None) from None
    except yaml.YAMLError as e:
        raise InputError(f"YAML: {e}", file=path) from None
    if node is None:
        raise InputError("the file is empty", file=path)
    lines: dict[Path_, int] = {}
    ctor = yaml.SafeLoader("")
    data = _convert(node, (), lines, ctor, path)
    return Located(data, lines, str(path))


def _convert(node, loc, lines, ctor, path):
    lines[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out = {}
        for knode, vnode in node.value:
            if not isinstance(knode, yaml.ScalarNode):
                raise InputError("mapping keys must be plain names", file=path,
                                 line=knode.start_mark.line + 1)
            key = ctor.construct_object(knode)
            if key == "<<":
                raise InputError("YAML merge keys (<<) are not supported", file=path,
                                 line=knode.start_mark.line + 1)
            if key in out:
                raise InputError("duplicate key", file=path, line=knode.start_mark.line + 1,
                                 field=_dotted(loc + (key,)))
            out[key] = _convert(vnode, loc + (key,), lines, ctor, path)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(v, loc + (i,), lines, ctor, path) for i, v in enumerate(node.value)]
    try:
        return ctor.construct_object(node)
    except yaml.YAMLError as e:
        raise InputError(f"bad value: {e}", file=path, line=node.start_mark.line + 1,
                         field=_dotted(loc)) from None


def _dotted(loc) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
