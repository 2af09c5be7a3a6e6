"""Debian's `opensm@<port GUID>.service` as the target of apply and status.

Debian 12 starts OpenSM per port with `ExecStart=/usr/sbin/opensm --guid %I --log_file
/var/log/opensm.%I.log`: no `-F` (so OpenSM reads /etc/opensm/opensm.conf only if it exists,
and its command-line options beat the file), no pidfile, no ExecReload. From the unit ibqos
derives what the other paths of apply take as options: the config file, the log file (the
command line's, not /var/log/opensm.log) and the main PID. When systemd runs, it is asked
(`systemctl show`); otherwise (a container, a test) the unit file is read from the standard
directories, drop-ins included, and the process is found by its exact command line.
"""

from __future__ import annotations

import re
import shlex
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import osmconf
from ..errors import ExternalError, InputError, ProcessError
from ..osmunit import restart_hint, systemctl, systemd_running
from ..proc import run_command

UNIT_DIRS = ("/etc/systemd/system", "/run/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system")
OSM_DEFAULT_CONF = Path("/etc/opensm/opensm.conf")  # OpenSM 3.3.23's default (-F)
OSM_DEFAULT_QOS_POLICY_FILE = Path("/etc/opensm/qos-policy.conf")  # OpenSM 3.3.23 (-Y), when unset
OSM_DEFAULT_PARTITIONS_FILE = Path("/etc/opensm/partitions.conf")  # OpenSM 3.3.23 (-P), when unset
OSM_DEFAULT_LOG = Path("/var/log/opensm.log")
_UNIT = re.compile(r"^(?P<prefix>[\w.-]+)@(?P<instance>[^./\s]+)(?:\.service)?$")


@dataclass(frozen=True)
class ServiceTarget:
    unit: str  # opensm@0x0002c903000a1234.service
    argv: tuple[str, ...]  # ExecStart, expanded
    conf: Path  # the opensm.conf this OpenSM reads (it may not exist yet)
    conf_given: bool  # -F on the command line (else OpenSM's default, if present)
    log: Path
    pid: int | None  # main PID, None when not running

    def restart_hint(self) -> str:
        return restart_hint(self.pid or 0, self.unit)


def resolve(unit: str) -> ServiceTarget:
    m = _UNIT.match(unit)
    if not m:
        raise InputError(f"{unit!r} is not a unit instance like opensm@0x0002c903000a1234", field="--service")
    name = f"{m['prefix']}@{m['instance']}.service"
    argv = _exec_start_systemd(name) if systemd_running() else _exec_start_files(name, m["prefix"], m["instance"])
    if not argv or Path(argv[0]).name != "opensm":
        raise InputError(f"{name} does not start opensm (ExecStart: {' '.join(argv) or 'none'})", field="--service")
    opts = opensm_options(argv[1:])
    conf = Path(opts["config"]) if "config" in opts else OSM_DEFAULT_CONF
    log = opts.get("log_file")
    if log is None:
        file_opts = osmconf.parse(osmconf.read(conf)) if conf.is_file() else {}
        log = file_opts.get("log_file") or str(OSM_DEFAULT_LOG)
    return ServiceTarget(
        unit=name, argv=tuple(argv), conf=conf, conf_given="config" in opts, log=Path(log), pid=_main_pid(name, argv)
    )


# ---- ExecStart ---------------------------------------------------------------------------


def _exec_start_systemd(name: str) -> list[str]:
    out = systemctl("show", "-p", "ExecStart", "--value", name)
    m = re.search(r"argv\[\]=([^;]*);", out)
    return shlex.split(m.group(1)) if m else []


def _exec_start_files(name: str, prefix: str, instance: str) -> list[str]:
    """The unit's ExecStart as systemd would compose it: the first unit file found in the
    standard directories (the instance's own, else the template), then drop-ins in order,
    where an empty `ExecStart=` clears what came before."""
    files: list[Path] = []
    for base in (name, f"{prefix}@.service"):
        found = next((Path(d) / base for d in UNIT_DIRS if (Path(d) / base).is_file()), None)
        if found:
            files.append(found)
            break
    if not files:
        raise InputError(f"no unit file for {name} in {', '.join(UNIT_DIRS)}", field="--service")
    dropins: dict[str, Path] = {}
    for d in reversed(UNIT_DIRS):  # /etc overrides /lib for one file name
        for base in (f"{prefix}@.service.d", f"{name}.d"):
            for f in sorted((Path(d) / base).glob("*.conf")) if (Path(d) / base).is_dir() else ():
                dropins[f.name] = f
    files += [dropins[k] for k in sorted(dropins)]
    line: str | None = None
    for f in files:
        section = None
        for raw in f.read_text().splitlines():
            s = raw.strip()
            if s.startswith("["):
                section = s
            elif section == "[Service]" and s.startswith("ExecStart="):
                line = s.split("=", 1)[1].strip()
    if not line:
        return []
    line = line.lstrip("@-:+!")  # systemd's exec prefixes
    return [_expand(a, instance) for a in shlex.split(line)]


def _expand(arg: str, instance: str) -> str:
    """%I (unescaped instance) and %i; a GUID needs no unescaping."""
    return arg.replace("%I", instance).replace("%i", instance).replace("%%", "%")


# Options OpenSM 3.3.23's command line sets over its config file (main.c parses the file
# first), which apply's decisions depend on, by opensm.conf key; OpenSM re-reads none of them.
CMDLINE_OVER_FILE = {
    "-Y": "qos_policy_file",
    "--qos_policy_file": "qos_policy_file",
    "-P": "partition_config_file",
    "--Pconfig": "partition_config_file",
    "-R": "routing_engine",
    "--routing_engine": "routing_engine",
    "-l": "lmc",
    "--lmc": "lmc",
    "--dump_files_dir": "dump_files_dir",
}


def opensm_options(args: list[str]) -> dict[str, str]:
    """The options of an opensm command line that decide where it reads and logs, and those
    it sets over its config file (CMDLINE_OVER_FILE)."""
    names = {
        "-F": "config",
        "--config": "config",
        "-f": "log_file",
        "--log_file": "log_file",
        "-g": "guid",
        "--guid": "guid",
        **CMDLINE_OVER_FILE,
    }
    out, it = {}, iter(args)
    for a in it:
        key, _, val = a.partition("=")
        if key in names:
            out[names[key]] = val if val else next(it, "")
    return out


# ---- main PID -------------------------------------------------------------------------------


def _main_pid(name: str, argv: list[str]) -> int | None:
    if systemd_running():
        pid = int(systemctl("show", "-p", "MainPID", "--value", name).strip() or 0)
        return pid or None
    want = [a.encode() for a in argv]
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        except OSError:
            continue
        if cmd == want:
            found.append(int(p.name))
    if len(found) > 1:
        raise ExternalError(
            f"{len(found)} processes run {' '.join(argv)} (pids "
            f"{', '.join(map(str, found))}): cannot tell which is {name}"
        )
    return found[0] if found else None


# ---- a whole opensm.conf -------------------------------------------------------------------


def opensm_defaults(env: dict[str, str] | None = None) -> str:
    """OpenSM's own full configuration (`opensm -c FILE`), the base a missing
    /etc/opensm/opensm.conf is created from: never an ibqos fragment on its own."""
    exe = shutil.which("opensm") or "/usr/sbin/opensm"
    with tempfile.TemporaryDirectory(prefix="ibqos-osmconf-") as tmp:
        out = Path(tmp) / "opensm.conf"
        try:
            run_command([exe, "-c", str(out)], timeout=60, env=env, cwd=tmp)
            return out.read_text()
        except (OSError, ProcessError) as e:
            raise ExternalError(f"opensm -c could not write OpenSM's default configuration: {e}") from e


def is_whole_conf(text: str) -> bool:
    """OpenSM's full configuration names well over a hundred options; an ibqos fragment (the
    rendered opensm.conf) a few dozen. A file that lacks options every full file has is taken
    for a fragment, not for what OpenSM reads."""
    opts = osmconf.parse(text)
    return all(k in opts for k in ("guid", "sweep_interval", "log_file", "lmc", "max_wire_smps"))
