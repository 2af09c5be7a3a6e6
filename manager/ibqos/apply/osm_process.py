"""What a running OpenSM reads, from its command line (`/proc/PID/cmdline`), and which other
OpenSMs on the host read the same configuration.

OpenSM 3.3.23 reads the config file `-F` names, else /etc/opensm/opensm.conf, and logs to
`-f`/`--log_file` over the file's `log_file`. Debian runs one OpenSM per port
(`opensm@GUID.service`: `--guid %I --log_file /var/log/opensm.%I.log`, the init script:
`-g PORT -f /var/log/opensm.PORT.log`), all without `-F`: two ports, two OpenSMs, one
opensm.conf, one dump_files_dir. An apply for one of them would change the other's
configuration at its next heavy sweep, unverified, and the two plugin records overwrite each
other in that directory; so apply refuses a configuration another running OpenSM reads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .. import osmconf
from ..errors import ExternalError, InputError
from ..fabric.dla_record import record_dir
from ..osmconf import is_set
from ..policy.partitions import Partitions, read_partitions
from .service import CMDLINE_OVER_FILE, OSM_DEFAULT_CONF, OSM_DEFAULT_PARTITIONS_FILE, opensm_options

# opensm.conf options naming files OpenSM (or the ibqos plugin, in its process) opens, from
# its working directory when relative; ibqos writes each or reads the plugin's record there,
# so with no process to ask a relative one is refused
WRITTEN_PATHS = ("qos_policy_file", "event_plugin_options", "partition_config_file", "dump_files_dir")
# ... and the log, which apply reads the sweep's errors from and status the engine in force
# (a relative one not found is no log: nothing to refuse)
FILE_PATHS = (*WRITTEN_PATHS, "log_file")


@dataclass(frozen=True)
class OsmProcess:
    pid: int
    argv: tuple[str, ...]
    conf: Path  # -F, else OpenSM's default
    conf_given: bool
    log: Path | None  # -f / --log_file, which beats the file's log_file
    over_file: dict[str, str]  # opensm.conf keys its command line sets (-Y, -P, -R, -l, --dump_files_dir), as given
    cwd: Path  # where it opens a relative path, its config file's included
    started: int | None = None  # its start time (/proc/PID/stat, clock ticks since boot): a reused PID differs

    @classmethod
    def of(cls, pid: int) -> OsmProcess | None:
        """The OpenSM `pid` as its command line says, or None if it is gone or not opensm."""
        proc = Path(f"/proc/{pid}")
        try:
            raw = (proc / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")
            cwd = Path(os.readlink(proc / "cwd"))
        except OSError:
            return None
        started = _start_time(pid)
        argv = tuple(a.decode(errors="surrogateescape") for a in raw)
        if not argv or Path(argv[0]).name != "opensm":
            return None
        opts = opensm_options(list(argv[1:]))
        conf = cwd / opts["config"] if "config" in opts else OSM_DEFAULT_CONF  # as it sees them
        log = cwd / opts["log_file"] if opts.get("log_file") else None
        over = {k: opts[k] for k in set(CMDLINE_OVER_FILE.values()) if k in opts}
        return cls(pid, argv, conf, "config" in opts, log, over, cwd, started)

    def alive(self) -> bool:
        """Whether this process still runs: its PID is there and was not reused by another."""
        return self.started is not None and _start_time(self.pid) == self.started

    def options(self, conf_opts: dict[str, str]) -> dict[str, str]:
        """What it runs with of its config file's options `conf_opts`: its command line's over
        them, and a relative path taken from its working directory, as it opens them."""
        out = {**conf_opts, **self.over_file}
        for key in FILE_PATHS:
            if is_set(out, key) and not Path(out[key]).is_absolute():
                out[key] = str(self.cwd / out[key])
        return out

    def reads(self, conf: Path) -> bool:
        """Whether its config file is `conf`, by inode: its path is looked up in its own mount
        namespace (/proc/PID/root), so an OpenSM in a container or in another test's private
        /etc is not taken for one that reads this host's file."""
        try:
            return os.path.samefile(Path(f"/proc/{self.pid}/root") / self.conf.relative_to("/"), conf)
        except (OSError, ValueError):
            return False


def _start_time(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat (its command name, field 2, may hold blanks and ')')."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return int(stat.rpartition(b")")[2].split()[19])


def running() -> list[OsmProcess]:
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit() and (osm := OsmProcess.of(int(p.name))) is not None:
            found.append(osm)
    return found


def reader(conf: Path) -> OsmProcess | None:
    """The running OpenSM that reads `conf` (for a command given only the file), or None."""
    readers = [o for o in running() if o.reads(conf)]
    if len(readers) > 1:
        raise InputError(
            f"read by OpenSM pids {', '.join(str(o.pid) for o in readers)}, on different ports: give each its own "
            "opensm.conf (-F, docs/sm-hosts.md)",
            file=conf,
        )
    return readers[0] if readers else None


def running_options(
    conf: Path,
    text: str,
    osm: OsmProcess | None,
    keys: tuple[str, ...] = WRITTEN_PATHS,
    ask: str = "give --pid or --service",
) -> dict[str, str]:
    """The options OpenSM `osm` runs with from `conf` (its text `text`): its command line's
    -Y, -P, -R, -l, --dump_files_dir over the file, relative paths from its working directory.
    With no process (None) the file's; a relative path among `keys` is refused then: where
    OpenSM opens it is unknown (`ask`: how the command names the process)."""
    opts = osm.options(osmconf.parse(text)) if osm is not None else osmconf.parse(text)
    for key in keys:
        if is_set(opts, key) and not Path(opts[key]).is_absolute():
            raise InputError(
                f"{opts[key]} is relative: OpenSM opens it from its own working directory, which "
                f"ibqos reads from a running OpenSM only: {ask}, or make it absolute",
                file=conf,
                line=osmconf.line_of(text, key),
                field=key,
            )
    return opts


def dump_dir(conf: Path, osm: OsmProcess | None, ask: str) -> Path:
    """Where OpenSM `osm` (None: not known) started on `conf` writes its dumps, and so the
    plugin's record: as running_options takes dump_files_dir, else record_dir's defaults."""
    opts = running_options(conf, osmconf.read(conf), osm, ("dump_files_dir",), ask)
    return record_dir(opts, osm.pid if osm is not None else None)


def sms_partitions(opts: dict[str, str]) -> Partitions | None:
    """The partitions file OpenSM runs with `opts` reads (running_options': its -P over the file,
    else OpenSM's default), parsed: a plan without partitions leaves it in force, and OpenSM
    re-reads it at every heavy sweep. None when it reads none (`(null)`), the file is not there,
    its path is relative with no process to ask, or ibqos's parser refuses it (OpenSM's to judge)."""
    if "partition_config_file" in opts and not is_set(opts, "partition_config_file"):
        return None
    path = Path(opts.get("partition_config_file") or OSM_DEFAULT_PARTITIONS_FILE)
    if not path.is_absolute() or not path.is_file():
        return None
    try:
        return read_partitions(path)
    except InputError:
        return None


def check_reads(pid: int, conf: Path) -> OsmProcess | None:
    """The OpenSM `pid`, which must read `conf` (apply and status are given both). None when
    its command line cannot be read (another user's process)."""
    osm = OsmProcess.of(pid)
    if osm is not None and not osm.reads(conf):
        how = "its -F" if osm.conf_given else "OpenSM's default: it runs without -F"
        raise InputError(
            f"OpenSM (pid {pid}) reads {osm.conf} ({how}), not this file: give --opensm-conf {osm.conf}",
            file=conf,
            field="--opensm-conf",
        )
    return osm


def check_target(pid: int, conf: Path) -> OsmProcess | None:
    """The OpenSM `pid` must read `conf`, and no other running OpenSM may (see the module's
    docstring). None when its command line cannot be read (another user's process)."""
    osm = check_reads(pid, conf)
    if osm is None:
        return None
    others = [o for o in running() if o.pid != pid and o.reads(conf)]
    if others:
        o = others[0]
        raise ExternalError(
            f"{conf} is also read by OpenSM pid {o.pid} ({' '.join(o.argv)}): an apply for pid {pid} "
            "would change that OpenSM's configuration at its next heavy sweep, unverified, and both "
            "write their plugin record to one dump_files_dir; give each its own opensm.conf (-F; for "
            "Debian's unit a drop-in 'ExecStart=/usr/sbin/opensm --guid %I -F /etc/opensm/opensm.%I.conf "
            "--log_file /var/log/opensm.%I.log') with its own dump_files_dir"
        )
    return osm
