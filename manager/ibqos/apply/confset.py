"""A set of configuration files that changes all at once, or not at all.

OpenSM reads three files ibqos manages: opensm.conf, the QoS policy file and the plugin's
table file. Renaming three files one after the other leaves a moment (and, after a crash, a
state) where OpenSM would read a mix. Instead each managed path becomes a symlink into
`<state>/current/`, and `current` itself is a symlink to one version directory: flipping
`current` with a single rename(2) switches every file at once.

    /etc/opensm/opensm.conf       -> /etc/opensm/ibqos.d/current/opensm.conf
    /etc/opensm/qos-policy.conf   -> /etc/opensm/ibqos.d/current/qos-policy.conf
    /etc/opensm/ibqos.d/current   -> v0003

The first apply adopts the admin's existing files as version v0000 (each path is swapped for
a symlink to an identical copy, so even a crash half-way leaves every file with its old
content). Paths OpenSM itself reads never change, which matters because OpenSM 3.3.23
re-reads neither `qos_policy_file` nor `event_plugin_options` at run time.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..docfile import fsync_dir, write_atomic
from ..errors import ExternalError

_VERSION = re.compile(r"^v(\d{4,})$")  # v0000 … v9999, then v10000 …
# Beside a version's plan.json: the fabric read back when that version was verified. Its
# links are the planned links `ibqos status` holds the fabric to (docs/verify.md).
VERIFIED_FABRIC = "fabric.json"


def _symlink_over(target: str, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.lnk{os.getpid()}")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(target, tmp)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def stable_path(p: Path) -> Path:
    """`p` with its directory resolved but its last component kept: once ibqos has adopted a
    file, the file itself is a symlink into a version directory, and following it would give
    every version its own state directory (and lock) nested inside the last one."""
    p = Path(os.path.abspath(p))
    return p.parent.resolve() / p.name


def state_dir_for(opensm_conf: Path) -> Path:
    """The one state directory of the configuration rooted at `opensm_conf`: `ibqos.d/` beside
    it, the same for every apply and status whatever the symlinks point at now."""
    return stable_path(opensm_conf).parent / "ibqos.d"


@dataclass
class ConfigSet:
    """The managed paths, by role name (e.g. {"opensm.conf": Path(...)}), and the state dir."""

    paths: dict[str, Path]
    state: Path

    @classmethod
    def beside(cls, opensm_conf: Path, paths: dict[str, Path]) -> ConfigSet:
        return cls(paths, state_dir_for(opensm_conf))

    @property
    def current(self) -> Path:
        return self.state / "current"

    def versions(self) -> list[str]:
        if not self.state.is_dir():
            return []
        return sorted(
            (p.name for p in self.state.iterdir() if _VERSION.match(p.name) and p.is_dir()), key=lambda v: int(v[1:])
        )

    def verified_fabric(self, version: str) -> Path:
        return self.state / version / VERIFIED_FABRIC

    def current_version(self) -> str | None:
        return os.readlink(self.current) if self.current.is_symlink() else None

    def adopted(self) -> bool:
        return self.current_version() is not None and all(
            p.is_symlink() and os.readlink(p) == str(self.current / name) for name, p in self.paths.items()
        )

    def adopt(self, hook=lambda step: None) -> None:
        """First use: copy the admin's files into v0000 and point the paths at `current`.

        A path that is a symlink somewhere else with other contents (e.g. into the nested
        layout older ibqos made, `ibqos.d/vNNNN/ibqos.d/…`, one level per apply) keeps the
        contents it has now: they become a new version, so relinking never changes what
        OpenSM reads."""
        self.state.mkdir(parents=True, exist_ok=True)
        if self.current_version() is None:
            v0 = self.state / "v0000"
            v0.mkdir(exist_ok=True)
            for name, p in self.paths.items():
                data = p.read_text() if p.exists() else ""
                # the admin's file keeps its mode: 0644 stays readable by tools that read it
                write_atomic(v0 / name, data, mode=p.stat().st_mode & 0o7777 if p.exists() else None)
            write_atomic(
                v0 / "meta.json", json.dumps({"adopted_from": {n: str(p) for n, p in self.paths.items()}}) + "\n"
            )
            fsync_dir(v0)
            _symlink_over("v0000", self.current)
        new = {name: p for name, p in self.paths.items() if not (self.current / name).exists()}
        if new:
            # a file this configuration did not manage yet (e.g. the partitions file, the first
            # time a plan has partitions): its present contents join a new version, so taking
            # it over changes nothing OpenSM reads
            files = {name: (self.current / name).read_text() for name in self.paths if name not in new}
            files.update({name: (p.read_text() if p.exists() else "") for name, p in new.items()})
            self.flip(self.stage(files, {"adopted_from": {n: str(p) for n, p in new.items()}}))
        stray = {}
        for name, p in self.paths.items():
            if (
                p.is_symlink()
                and os.readlink(p) != str(self.current / name)
                and p.exists()
                and p.read_bytes() != (self.current / name).read_bytes()
            ):
                stray[name] = p
        if stray:
            live = {name: (p.read_text() if p.exists() else "") for name, p in self.paths.items()}
            self.flip(self.stage(live, {"adopted_from": {n: os.readlink(p) for n, p in stray.items()}}))
        for name, p in self.paths.items():
            if not (p.is_symlink() and os.readlink(p) == str(self.current / name)):
                if p.exists() and not p.is_symlink() and p.read_bytes() != (self.current / name).read_bytes():
                    raise ExternalError(
                        f"{p} changed since ibqos adopted it; merge it into {self.current / name} first"
                    )
                hook("adopt")
                _symlink_over(str(self.current / name), p)

    def stage(self, files: dict[str, str], meta: dict, extra: dict[str, str] | None = None) -> str:
        """Write a new version directory (not yet current) and return its name. `extra` are
        files kept beside the managed ones (the plan, so a later command can verify it)."""
        n = max((int(_VERSION.match(v).group(1)) for v in self.versions()), default=0) + 1
        name = f"v{n:04d}"
        d = self.state / name
        tmp = self.state / f".{name}.tmp"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
        for role in self.paths:
            cur = self.current / role
            write_atomic(tmp / role, files[role], mode=cur.stat().st_mode & 0o7777 if cur.exists() else None)
        for fname, text in (extra or {}).items():
            write_atomic(tmp / fname, text)
        write_atomic(tmp / "meta.json", json.dumps(meta, indent=1) + "\n")
        os.replace(tmp, d)
        fsync_dir(self.state)
        return name

    def flip(self, version: str) -> None:
        """The one atomic step: every managed path now reads `version`."""
        if not (self.state / version).is_dir():
            raise ExternalError(f"no configuration version {version} in {self.state}")
        _symlink_over(version, self.current)

    def read(self, version: str | None = None) -> dict[str, str]:
        base = self.state / version if version else self.current
        return {role: (base / role).read_text() for role in self.paths}

    def prune(self, keep: int, protect: set[str]) -> list[str]:
        """Delete all but the newest `keep` version directories (never one in `protect`, e.g.
        current and the rollback target); returns the names removed."""
        versions = self.versions()
        drop = [v for v in versions[: max(0, len(versions) - keep)] if v not in protect]
        for v in drop:
            # rename first so a crash mid-delete leaves a hidden leftover, never a half version
            doomed = self.state / f".{v}.del"
            os.replace(self.state / v, doomed)
            shutil.rmtree(doomed, ignore_errors=True)
        if drop:
            fsync_dir(self.state)
        for p in self.state.glob(".v*.del"):
            shutil.rmtree(p, ignore_errors=True)
        return drop

    def cleanup_staging(self) -> None:
        for p in self.state.glob(".v*.tmp"):
            shutil.rmtree(p, ignore_errors=True)
