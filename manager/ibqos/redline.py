"""The red line: one line whenever the routing in force has a credit loop, naming the engine.

    CREDIT LOOP: routing in force (minhop) has a credit loop: sw-g0-s0:5/0 → sw-g1-s2:7/0 → …

The engine is the one OpenSM last logged as `<engine> tables configured on all switches`
(so a dla refusal that fell back to minhop says minhop). The verdict is the verifier's,
on the tables read back or dumped, never the engine's own claim.
"""

from __future__ import annotations

from pathlib import Path

from . import osmlog

DEFAULT_LOG = Path("/var/log/opensm.log")  # OpenSM's default log_file
MAX_CHANNELS = 12  # channels named on the line before "…"
# Engines that avoid credit loops with per-path SLs: judging them with one SL for every pair
# would report loops their own SLs avoid.
LAYERED = ("lash", "dfsssp", "sssp", "nue", "torus-2QoS")


def engine_in_force(log: Path | None) -> str | None:
    """The engine of OpenSM's last routing pass in `log`, or None when the log does not say.
    Only OpenSM's log names it (ibqos.osmlog says why)."""
    return osmlog.engine_in_force(log)


def find_osm_log(path: Path | None) -> Path | None:
    """OpenSM's log for a dump or run directory: DIR/../osm.log beside `dumps/`, else the newest
    osm.log up to two levels below (a harness run: sm0/osm.log, fabric/sm1/osm.log)."""
    if path is None:
        return DEFAULT_LOG if _readable(DEFAULT_LOG) else None
    path = Path(path)
    if path.is_file():
        path = path.parent
    if path.name == "dumps" and (path.parent / "osm.log").is_file():
        return path.parent / "osm.log"
    found = [p for pat in ("osm.log", "*/osm.log", "*/*/osm.log") for p in path.glob(pat)]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def red_line(cycle: list[str], engine: str | None) -> str:
    """The cycle closes on its first channel; a long one is cut after MAX_CHANNELS channels."""
    head = f"CREDIT LOOP: routing in force ({engine or 'engine unknown'}) has a credit loop: "
    if len(cycle) <= MAX_CHANNELS:
        return head + " → ".join(cycle + cycle[:1])
    return head + " → ".join(cycle[:MAX_CHANNELS] + ["…"]) + f" ({len(cycle)} channels)"


def needs_path_sls(engine: str | None) -> bool:
    return engine in LAYERED


def _readable(p: Path) -> bool:
    try:
        with open(p, "rb"):
            return True
    except OSError:
        return False
