"""Rendering: the plan's numbers into the three templates, written atomically."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from ..arbiter import ArbTable
from ..plan.model import ROLE_NAMES, Plan
from ..templating import render
from .fallback import DLA_CHAIN, fallback_sl2vl

FILES = {"opensm.conf": "opensm.conf.j2", "qos-policy.conf": "qos-policy.conf.j2",
         "plugin-tables.conf": "plugin-tables.j2"}


def render_plan(plan: Plan, out_dir: str | Path) -> dict[str, Path]:
    out_dir = Path(out_dir).absolute()
    texts = render_texts(plan, out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        for name, text in texts.items():
            (tmp / name).write_text(text)
        if not out_dir.exists():
            os.rename(tmp, out_dir)
        else:                                   # each file replaced atomically
            for name in texts:
                os.replace(tmp / name, out_dir / name)
            tmp.rmdir()
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return {name: out_dir / name for name in texts}


def render_texts(plan: Plan, out_dir: Path) -> dict[str, str]:
    """The three files' contents, with paths pointing into `out_dir`."""
    roles = {r: _role_ctx(plan.vlarb.role(r).high, plan.vlarb.role(r).low,
                          plan.vlarb.role(r).high_limit) for r in ROLE_NAMES}
    ports = []
    for p in plan.vlarb.ports:
        ctx = _role_ctx(p.high, p.low, p.high_limit)
        ctx.update(guid=f"0x{int(str(p.guid), 16):016x}", port=p.port)
        ports.append(ctx)
    dla = plan.fabric.routing == "dla"
    common = dict(plan=plan, roles=roles, role_names=ROLE_NAMES, ports=ports)
    return {
        "opensm.conf": render(
            FILES["opensm.conf"], **common,
            routing_engine=DLA_CHAIN if dla else plan.fabric.routing,
            plugin=dla, tables_path=str(out_dir / "plugin-tables.conf"),
            policy_path=str(out_dir / "qos-policy.conf"), max_vls=plan.fabric.data_vls,
            # Under dla the plugin programs every SL2VL; these lines serve the fallback only.
            sl2vl=fallback_sl2vl(plan.fabric.data_vls) if dla else plan.sl2vl),
        "qos-policy.conf": render(FILES["qos-policy.conf"], **common, **_policy_ctx(plan)),
        "plugin-tables.conf": render(FILES["plugin-tables.conf"], **common),
    }


def _role_ctx(high, low, limit) -> dict:
    ArbTable(high, low, limit)                  # the plan's tables are valid IB tables
    return {
        "high_osm": _osm(high), "low_osm": _osm(low),
        "high_list": ArbTable.format_entries(high), "low_list": ArbTable.format_entries(low),
        "high_limit": limit,
    }


def _osm(entries) -> str:
    # OpenSM reads an unset table as its own default; an empty one is a single skipped entry.
    return ",".join(f"{vl}:{w}" for vl, w in entries) or "0:0"


def _policy_ctx(plan: Plan) -> dict:
    groups, rules, ulps = [], [], []
    for c in plan.classes:
        m = c.match or {}
        names = []
        for g in m.get("groups") or []:
            groups.append({**g, "cls": c.name})
            names.append(g["name"])
        crit = {k: m.get(k) or [] for k in ("service_id", "pkey", "qos_class")}
        direction = m.get("direction", "either")
        if names:
            for n in names:
                if direction in ("source", "either"):
                    rules.append({"cls": c.name, "source": n, "destination": None, **crit})
                if direction in ("destination", "either"):
                    rules.append({"cls": c.name, "source": None, "destination": n, **crit})
                if direction == "both":
                    for d in names:
                        rules.append({"cls": c.name, "source": n, "destination": d, **crit})
        elif any(crit.values()):
            rules.append({"cls": c.name, "source": None, "destination": None, **crit})
        for u in m.get("ulps") or []:
            text = u["ulp"]
            for key, word in (("pkey", "pkey"), ("port_num", "port-num"),
                              ("service_id", "service-id"),
                              ("target_port_guid", "target-port-guid"),
                              ("source_port_guid", "source-port-guid")):
                if u.get(key) is not None:
                    text += f", {word} {u[key]}"
            ulps.append({"text": text, "sl": c.sls[0]})
    default = next(c for c in plan.classes if c.default)
    return dict(groups=groups, rules=rules, ulps=ulps, default=default, classes=plan.classes)
