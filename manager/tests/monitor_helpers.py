"""Hand-made inputs for the monitor's arithmetic: a two-node fabric whose one link runs at a
given width and lane speed, and ibqos.counters/1 documents of its two ports."""

from __future__ import annotations

import json

from ibqos.fabric.model import Fabric

SW, CA = 0x20, 0x30


def link_fabric(width: str = "4X", speed: str = "10.0") -> Fabric:
    """A switch (GUID 0x20, desc "sw") port 1 linked to a CA (0x30, "ca") port 1."""
    port = {"width": width, "speed": speed}
    return Fabric.from_json(json.dumps(
        {
            "schema": "ibqos.fabric/1",
            "nodes": [
                {"guid": f"0x{SW:x}", "kind": "switch", "desc": "sw", "nports": 1,
                 "ports": [{"num": 0, "lid": 1}, {"num": 1, "remote": [f"0x{CA:x}", 1], **port}]},
                {"guid": f"0x{CA:x}", "kind": "ca", "desc": "ca", "nports": 1,
                 "ports": [{"num": 1, "lid": 2, "remote": [f"0x{SW:x}", 1], **port}]},
            ]
        }
    ))  # fmt: skip


def sample_doc(t: float, ports: list[dict]) -> str:
    return json.dumps({"schema": "ibqos.counters/1", "time": t, "ports": ports})


def per_sl(values: dict[int, int]) -> list[int]:
    """16 counters, SL -> value, the rest 0."""
    return [values.get(sl, 0) for sl in range(16)]
