"""Rendering: the plan's numbers into the three templates, written atomically."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..arbiter import ArbTable
from ..docfile import write_dir_atomic
from ..errors import InputError
from ..plan.model import Plan
from ..roles import ROLES
from ..templating import render
from ..vls import vlcap_code
from .fallback import DLA_CHAIN, fallback_sl2vl
from .rules import policy_rules

# OpenSM 3.3.23 reads an opensm.conf value up to a line break or a '#' (checked with `opensm
# -F conf -c out`: `qos_policy_file /a#b/x` comes back as `/a`)
OSM_PATH_BREAKS = "\n\r#"
# ... and reads a line with fgets(line, 1023): the bytes of a longer one from 1023 on are read
# as a line of their own, so a path that long names another file (checked with opensm -c)
OSM_LINE_MAX = 1022
# the options whose value is a path into the rendered directory (opensm.conf.j2), and the file
PATH_OPTIONS = {
    "event_plugin_options": "plugin-tables.conf",
    "qos_policy_file": "qos-policy.conf",
    "partition_config_file": "partitions.conf",
}

FILES = {
    "opensm.conf": "opensm.conf.j2",
    "qos-policy.conf": "qos-policy.conf.j2",
    "plugin-tables.conf": "plugin-tables.j2",
}


def render_plan(plan: Plan, out_dir: str | Path, port_types: dict[str, str] | None = None) -> dict[str, Path]:
    """Write the files into `out_dir`. `port_types` (port name or GUID -> CA/SWITCH/ROUTER,
    when the fabric is known) resolves `node_type` filters on named ports (rules.py)."""
    out_dir = Path(out_dir).absolute()
    check_osm_dir(out_dir)
    texts = render_texts(plan, out_dir, port_types)
    write_dir_atomic(out_dir, texts)
    return {name: out_dir / name for name in texts}


def check_osm_dir(out_dir: Path) -> None:
    """Refuse a directory the rendered opensm.conf could not name (OSM_PATH_BREAKS, a name
    that is not UTF-8, a line too long)."""
    text = str(out_dir)
    if undecoded := [c for c in text if "\udc80" <= c <= "\udcff"]:
        # Python's stand-in for a byte the file system name had and UTF-8 does not
        raise InputError(
            f"its name is not UTF-8 (byte 0x{ord(undecoded[0]) - 0xDC00:02x}), and the opensm.conf that "
            "names it is UTF-8 text, written and read back as such; choose another directory",
            file=out_dir,
        )
    if bad := sorted({c for c in text if c in OSM_PATH_BREAKS}):
        raise InputError(
            "OpenSM's opensm.conf cannot name a file under this directory: its option parser ends a value at "
            + " and ".join({"\n": "a newline", "\r": "a carriage return", "#": "'#' (a comment)"}[c] for c in bad)
            + ", so qos_policy_file would name another file; choose another directory",
            file=out_dir,
        )
    key, name = max(PATH_OPTIONS.items(), key=lambda kv: len(f"{kv[0]} {out_dir / kv[1]}".encode()))
    if (n := len(f"{key} {out_dir / name}".encode())) > OSM_LINE_MAX:
        raise InputError(
            f"OpenSM's opensm.conf cannot name a file under this directory: OpenSM reads {OSM_LINE_MAX} bytes "
            f"of a line, and '{key}' would take {n}, so it would name another file; choose a shorter path",
            file=out_dir,
        )


def render_texts(plan: Plan, out_dir: Path, port_types: dict[str, str] | None = None) -> dict[str, str]:
    """The files' contents (three, and partitions.conf when the plan carries one), with paths
    pointing into `out_dir`."""
    roles = {r: _role_ctx(plan.vlarb.role(r)) for r in ROLES}
    ports = []
    for p in plan.vlarb.ports:
        ctx = _role_ctx(p.table)
        ctx.update(guid=f"0x{int(str(p.guid), 16):016x}", port=p.port)
        ports.append(ctx)
    dla = plan.fabric.routing == "dla"
    common = dict(plan=plan, roles=roles, role_names=ROLES, ports=ports)
    texts = {
        "opensm.conf": render(
            FILES["opensm.conf"],
            **common,
            routing_engine=DLA_CHAIN if dla else plan.fabric.routing,
            plugin=dla,
            tables_path=str(out_dir / PATH_OPTIONS["event_plugin_options"]),
            policy_path=str(out_dir / PATH_OPTIONS["qos_policy_file"]),
            data_vls=plan.fabric.data_vls,
            max_op_vls=vlcap_code(plan.fabric.data_vls),
            # Under dla the plugin programs every SL2VL; these lines serve the fallback only.
            sl2vl=fallback_sl2vl(plan.fabric.data_vls) if dla else plan.sl2vl,
            partitions_path=str(out_dir / PATH_OPTIONS["partition_config_file"]) if plan.partitions else None,
        ),
        "qos-policy.conf": render(FILES["qos-policy.conf"], **common, **_policy_ctx(plan, port_types)),
        "plugin-tables.conf": render(FILES["plugin-tables.conf"], **common),
    }
    if plan.partitions:
        texts["partitions.conf"] = plan.partitions.text
    return texts


def _role_ctx(t: ArbTable) -> dict[str, object]:
    return {
        "high_osm": _osm(t.high),
        "low_osm": _osm(t.low),
        "high_list": ArbTable.format_entries(t.high),
        "low_list": ArbTable.format_entries(t.low),
        "high_limit": t.limit,
    }


def _osm(entries: Iterable[tuple[int, int]]) -> str:
    # OpenSM reads an unset table as its own default; an empty one is a single skipped entry.
    return ArbTable.format_entries(entries) if entries else "0:0"


def _policy_ctx(plan: Plan, port_types: dict[str, str] | None) -> dict[str, Any]:
    groups, rules, _ = policy_rules(plan.classes, port_types)
    default = next(c for c in plan.classes if c.default)
    # IBA MTU encoding (1 = 256 .. 5 = 4096): the SA's path records carry at most the plan's MTU
    mtu_limit = plan.fabric.mtu.bit_length() - 8
    return dict(groups=groups, rules=rules, default=default, classes=plan.classes, mtu_limit=mtu_limit)
