"""Where a fabric model comes from, decided in one place for verify, status and simulate:
the live fabric, a `fabric.json`, a directory of OpenSM dumps, or a run directory holding
either (a dry run, a harness run, `ibqos fabric up`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..errors import InputError
from .dumps import OSM_DEFAULT_SL2VL, SL2VL_DUMP, assume_default_sl2vl, is_there, load_dumps
from .live import read_live
from .local_port import LocalPort
from .model import Fabric

DUMP_MARKER = "opensm-subnet.lst"


@dataclass
class LoadedFabric:
    fabric: Fabric
    path: Path | None  # the file or directory it was read from; None when live
    dumps: Path | None  # the dump directory, when the model came from dumps
    notes: list[str] = field(default_factory=list)  # what was assumed, for the reader


def find_dumps(rundir: Path, *, newest: bool = True) -> Path:
    """RUNDIR itself when it holds OpenSM's dumps, else the newest (or with newest=False the
    oldest) `dumps/`, `*/dumps` or `*/*/dumps` below it (a harness run directory: sm0/dumps,
    sm1/dumps, ...)."""
    if not rundir.exists():
        raise InputError("no such directory", file=rundir)
    if not rundir.is_dir():
        raise InputError("not a directory of OpenSM dumps", file=rundir)
    if is_there(rundir / DUMP_MARKER):
        return rundir
    found = [
        p.parent
        for pat in (f"dumps/{DUMP_MARKER}", f"*/dumps/{DUMP_MARKER}", f"*/*/dumps/{DUMP_MARKER}")
        for p in rundir.glob(pat)
    ]
    if not found:
        raise InputError(
            f"no {DUMP_MARKER} here or in */dumps (OpenSM writes it with -D 0x43 and dump_files_dir)", file=rundir
        )
    return (max if newest else min)(found, key=lambda p: (p / DUMP_MARKER).stat().st_mtime)


def load_fabric(
    source: Path | None,
    *,
    live: bool = False,
    env: dict[str, str] | None = None,
    prefer: Literal["model", "dumps"] = "model",
    require_sl2vl: bool = True,
    default_sl2vl: bool = False,
    at: LocalPort | None = None,
) -> LoadedFabric:
    """The one rule. `live`: read the running fabric. A `.json` file: that model. A directory:
        its `fabric.json` (the read-back model, VLArb and PortInfo included) unless `prefer` is
        "dumps" or there is none, then the newest OpenSM dumps in or below it. `default_sl2vl`:
        dumps without opensm-sl2vl.dump (OpenSM with qos FALSE) get OpenSM's default SL2VL on
        every port, with a note saying so, instead of an error. `at`: the local port to read out
    of (None: libibumad's first)."""
    if live:
        return LoadedFabric(read_live(env, at=at), None, None)
    if source is None:
        raise InputError("give a run directory, a fabric.json or dumps, or --live", field="source")
    if not source.exists():
        raise InputError("no fabric.json or OpenSM dumps here: no such file or directory", file=source)
    if source.is_file():
        if source.suffix != ".json":
            raise InputError("not a fabric.json (nor a directory of OpenSM dumps)", file=source)
        return LoadedFabric(Fabric.load(source), source, None)
    # any fabric.json entry is the run's read-back, refused where it is read when it is no file:
    # a dangling link or a directory was taken for none, and the dumps judged instead (no VLArb,
    # no MTU: status blamed every port's tables, 'no VLArb read back')
    if prefer == "model" and is_there(source / "fabric.json"):
        return LoadedFabric(Fabric.load(source / "fabric.json"), source / "fabric.json", None)

    try:
        dumps = find_dumps(source)
    except InputError as e:
        if prefer == "model":
            raise InputError(f"no fabric.json, and {e.detail}", file=source) from e
        raise
    if default_sl2vl and not is_there(dumps / SL2VL_DUMP):
        fabric = load_dumps(dumps, require_sl2vl=False)
        assume_default_sl2vl(fabric)
        mapping = ",".join(map(str, OSM_DEFAULT_SL2VL))
        note = (
            f"{dumps} has no {SL2VL_DUMP} (OpenSM with qos FALSE programs no SL2VL): assumed "
            f"OpenSM's default mapping SL→VL {mapping} on every port, as ibdmchk assumes one"
        )
        return LoadedFabric(fabric, dumps, dumps, [note])
    return LoadedFabric(load_dumps(dumps, require_sl2vl=require_sl2vl), dumps, dumps)
