"""The dla plugin's record of its last sweep (`<dump_files_dir>/ibqos-dla.json`, schema
`ibqos.dla-record/2`, plugin/README.md): OpenSM's sweep state (its PID, heavy sweeps started,
sweeps ended), whether dla routed or refused and why, the table file's fate, the groups it
used, and the VLArb and VLHighLimit it sent to every port. This is how ibqos learns what the
plugin did and that a sweep ended; the log is for people."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .. import __version__
from ..arbiter import ArbTable
from ..docfile import DOCUMENT
from ..errors import InputError
from ..inputfile import MiB, read_text

RECORD_FILE = "ibqos-dla.json"
# plugin/src/record.c writes the record here, then renames it over RECORD_FILE
RECORD_TEMP = RECORD_FILE + ".tmp"
OSM_DEFAULT_DUMP_DIR = Path("/var/log")  # OpenSM 3.3.23's dump_files_dir (OSM_DEFAULT_TMP_DIR)
SCHEMA = "ibqos.dla-record/2"


class _Model(BaseModel):
    # strict (docfile.DOCUMENT): the plugin writes numbers as numbers
    model_config = ConfigDict(**DOCUMENT, frozen=True)


def _guid(v: str | int) -> int:
    return int(v, 16) if isinstance(v, str) else v


class Engine(_Model):
    status: Literal["routed", "refused", "unused"]  # unused: dla routed nothing (no switch, or not asked)
    error: str | None = None  # D1A0 …
    reason: str | None = None


class TableFile(_Model):
    status: Literal["applied", "rejected", "none"]
    path: str | None = None
    reason: str | None = None


class Groups(_Model):
    source: str
    alternative: int
    members: list[list[int]]

    @field_validator("members", mode="before")
    @classmethod
    def _guids(cls, v: list[list[str | int]]) -> list[list[int]]:
        return [[_guid(g) for g in group] for group in v]


class Routes(_Model):
    through_third_group: int
    local_detours: int
    nearest_neighbour: int
    unreachable: int


class PortRecord(_Model):
    """One port the plugin programmed; in the file the table's fields (`high_limit`, `high`,
    `low`) sit beside the address."""

    guid: int  # node GUID
    port: int
    role: str
    table: ArbTable

    @model_validator(mode="before")
    @classmethod
    def _nest(cls, d: Any) -> Any:  # the raw document, as ArbTable.nest takes it
        return ArbTable.nest(d, ("guid", "port", "role"))

    @field_validator("guid", mode="before")
    @classmethod
    def _g(cls, v: str | int) -> int:
        return _guid(v)


class DlaRecord(_Model):
    schema_: Literal["ibqos.dla-record/2"] = Field(alias="schema")
    plugin_version: str | None = None  # the plugin's release; None: one from before it was recorded
    osm_pid: int  # the OpenSM process that wrote it: a restart starts the counters again
    heavy_sweeps: int  # heavy sweeps this OpenSM started (OSM_EVENT_ID_HEAVY_SWEEP_START)
    subnet_up: int  # sweeps it ended (OSM_EVENT_ID_SUBNET_UP)
    state: Literal["sweeping", "up"]  # between a heavy sweep's start and its SUBNET_UP, or not
    sweep: int  # heavy sweeps dla was asked to route
    engine: Engine
    table_file: TableFile
    groups: Groups | None = None
    vls_per_class: int | None = None
    levels: int | None = None
    turns_shifted: int | None = None
    routes: Routes | None = None
    ports_complete: bool
    ports: list[PortRecord]

    @property
    def refused(self) -> bool:
        return self.engine.status == "refused"

    @property
    def refusal(self) -> str | None:
        """dla's reason, "D1Ax: why", when it refused."""
        return f"{self.engine.error}: {self.engine.reason}" if self.refused else None

    def high_limits(self) -> dict[tuple[int, int], int]:
        """(node GUID, port) -> the VLHighLimit the plugin sent."""
        return {(p.guid, p.port): p.table.limit for p in self.ports}


def plugin_mismatch(rec: DlaRecord, restart: str) -> str | None:
    """Why the plugin OpenSM `rec.osm_pid` runs is not this ibqos's, or None when it is. OpenSM
    keeps the plugin it loaded at its start: after a package upgrade the old one routes until
    OpenSM restarts, and what this ibqos renders and verifies is not what it does. `restart`:
    how to restart that OpenSM (osmunit.restart_hint: its unit, or its command line)."""
    if rec.plugin_version == __version__:
        return None
    loaded = rec.plugin_version or "(before the version was recorded)"
    return (
        f"the running OpenSM (pid {rec.osm_pid}) has ibqos plugin {loaded} loaded, this ibqos is {__version__}: "
        f"restart it to load the installed plugin: {restart}"
    )


def read_record(dumps: Path) -> DlaRecord | None:
    """The record in a dump directory, or None when the plugin wrote none there (it was not
    loaded, or no heavy sweep asked dla to route)."""
    path = Path(dumps) / RECORD_FILE
    if not path.exists():
        return None
    # as every input is: a FIFO there hung status, /dev/zero filled the memory
    text = read_text(path, limit=64 * MiB, what="dla's record")
    try:
        return DlaRecord.model_validate_json(text)
    except ValidationError as e:
        err = e.errors()[0]
        raise InputError(
            f"not a dla record: {err['msg']}", file=path, field=".".join(map(str, err["loc"])) or None
        ) from e


def record_dir(opts: dict[str, str], pid: int | None) -> Path:
    """Where OpenSM `pid` writes its dumps and so the plugin's record: the file's
    dump_files_dir, else OSM_TMP_DIR of the process's environment (OpenSM's default comes
    from it), else OpenSM's default."""
    if opts.get("dump_files_dir"):
        return Path(opts["dump_files_dir"])
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if pid else []
    except OSError:
        env = []
    tmp = next((e.split(b"=", 1)[1] for e in env if e.startswith(b"OSM_TMP_DIR=")), b"")
    return Path(tmp.decode()) if tmp else OSM_DEFAULT_DUMP_DIR


def own_record(dumps: Path, pid: int) -> DlaRecord | None:
    """The record when OpenSM `pid` wrote it (one from before a restart does not count)."""
    rec = read_record(dumps)
    return rec if rec is not None and rec.osm_pid == pid else None
