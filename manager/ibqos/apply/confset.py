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

A version is written once and never changed: its files and directory are made read-only
(a-w) and `manifest.json` records the sha256 of every file in it, so an edit made through a
managed path (root ignores the mode) is found by `check()`. Versions that hold the admin's
own files (`adopted_from` in their meta.json, v0000 first) are never pruned.

A file the admin's configuration names but that does not exist (Debian's qos_policy_file,
/etc/opensm/qos-policy.conf, as shipped) is stored empty, as every role is, and named in the
version's meta.json `absent`: OpenSM runs without a missing file but refuses an empty one
(ERR AC10/AC04), so a version that says so has no link at that path (`flip`). In a store
from before the mark (an upgrade) the admin's files stored empty are the absent ones (`absent`).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .. import osmconf
from ..docfile import fsync_dir, write_atomic
from ..errors import ExternalError
from .version_meta import VersionMeta

if TYPE_CHECKING:
    from ..fabric.model import Fabric

_VERSION = re.compile(r"^v(\d{4,})$")  # v0000 … v9999, then v10000 …
MANIFEST = "manifest.json"
PATHS = "paths.json"  # the managed paths, by role, as adopt() last linked them


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def adopted_meta(adopted_from: dict[str, str], missing: list[str]) -> VersionMeta:
    """The meta of a version of the admin's own files: `absent` always, even empty, as a store
    from before the mark has none (`ConfigSet.absent` reads that one's empty files)."""
    return VersionMeta(adopted_from=adopted_from, absent=missing)


def _writable(d: Path) -> None:
    """Give back the owner's write bit on a read-only version (and its files) so it can be
    removed by a non-root user; root needs none of it."""
    for p in (d, *d.iterdir()) if d.is_dir() else ():
        if not p.is_symlink():
            os.chmod(p, stat.S_IMODE(p.lstat().st_mode) | stat.S_IWUSR)


def _remove_tree(d: Path) -> None:
    if d.is_dir():
        _writable(d)
        shutil.rmtree(d, ignore_errors=True)


# The fabric read back when a version was verified, kept beside the store (a version itself is
# read-only and holds only what was applied): its links are the planned links `ibqos status`
# holds the fabric to (docs/verify.md).
READBACKS = "readbacks"  # not v…: the store lists its versions by that prefix


def _symlink_over(target: str, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.lnk{os.getpid()}")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(target, tmp)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def make_state_dir(d: Path) -> None:
    """`d` (ibqos.d/, or a directory in it), created as open as the directory that holds the
    configuration (its read and search bits: /etc/opensm's 0755), whatever ibqos's umask. Every
    managed path becomes a link into ibqos.d/, so an OpenSM (or a monitoring user) that reads
    the configuration as another user must still get through it; under root's umask 077 it was
    0700 and OpenSM as another user could read no managed file any more."""
    if d.is_dir():
        return
    d.mkdir(parents=True, exist_ok=True)
    conf_dir = d.parent if d.name == "ibqos.d" else d.parent.parent
    os.chmod(d, (stat.S_IMODE(conf_dir.stat().st_mode) & 0o555) | 0o700)


def state_file_mode(state: Path) -> int:
    """The mode of a file ibqos keeps in ibqos.d/ (journal, history, paths, read-backs): the
    owner's read and write, and the read bits ibqos.d/ has for others (make_state_dir), not
    the umask's: `status` and `history` as a monitoring user read them."""
    try:
        return 0o600 | (stat.S_IMODE(state.stat().st_mode) & 0o044)
    except OSError:
        return 0o644


def stable_path(p: Path) -> Path:
    """`p` with its directory resolved but its last component kept: once ibqos has adopted a
    file, the file itself is a symlink into a version directory, and following it would give
    every version its own state directory (and lock) nested inside the last one."""
    p = Path(os.path.abspath(p))
    return p.parent.resolve() / p.name


def _recorded(paths: dict[str, Path]) -> dict[str, str]:
    """Managed paths as ibqos.d/ records them: absolute, as a later command run from another
    directory reads them (`--opensm-conf etc/opensm.conf` was recorded relative)."""
    return {n: str(stable_path(p)) for n, p in paths.items()}


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
        return self.state / READBACKS / f"{version}.fabric.json"

    def save_verified_fabric(self, version: str, fabric: Fabric) -> None:
        make_state_dir(self.verified_fabric(version).parent)
        fabric.save(self.verified_fabric(version), mode=state_file_mode(self.state))

    def current_version(self) -> str | None:
        return os.readlink(self.current) if self.current.is_symlink() else None

    def adopted(self) -> bool:
        return self.current_version() is not None and all(
            p.is_symlink() and os.readlink(p) == str(self.current / name) for name, p in self.paths.items()
        )

    def adopt(self, hook: Callable[[str], None] = lambda step: None) -> None:
        """First use: copy the admin's files into v0000 and point the paths at `current`.

        A path that is a symlink somewhere else with other contents (e.g. into the nested
        layout older ibqos made, `ibqos.d/vNNNN/ibqos.d/…`, one level per apply) keeps the
        contents it has now: they become a new version, so relinking never changes what
        OpenSM reads."""
        make_state_dir(self.state)
        missing = sorted(n for n, p in self.paths.items() if not p.exists())  # OpenSM reads nothing there
        if self.current_version() is None:
            if not (self.state / "v0000").is_dir():
                self._write_version(
                    "v0000",
                    {name: (osmconf.read(p) if p.exists() else "") for name, p in self.paths.items()},
                    adopted_meta(_recorded(self.paths), missing),
                    # the admin's file keeps its read bits: 0644 stays readable by tools that read it
                    modes={n: p.stat().st_mode & 0o7777 for n, p in self.paths.items() if p.exists()},
                )
            _symlink_over("v0000", self.current)
        new = {name: p for name, p in self.paths.items() if not (self.current / name).exists()}
        if new:
            # a file this configuration did not manage yet (e.g. the partitions file, the first
            # time a plan has partitions): its present contents join a new version, so taking
            # it over changes nothing OpenSM reads
            files = {name: osmconf.read(self.current / name) for name in self.paths if name not in new}
            files.update({name: (osmconf.read(p) if p.exists() else "") for name, p in new.items()})
            self.flip(self.stage(files, adopted_meta(_recorded(new), missing)))
        # a path that no longer reads `current` (a symlink elsewhere, or a file of its own that
        # replaced the link: `sed -i`, an editor's rename) keeps what it holds now: a new version
        stray = self.drifted()
        if stray:
            live = {name: (osmconf.read(p) if p.exists() else "") for name, p in self.paths.items()}
            where = {n: os.readlink(p) if p.is_symlink() else str(p) for n, p in stray.items()}
            self.flip(self.stage(live, adopted_meta(where, missing)))
        gone = self.absent(self.current_version())
        for name, p in self.paths.items():
            if name in gone and not os.path.lexists(p):
                continue  # stays missing, as the current version records: flip links it when one holds it
            if not (p.is_symlink() and os.readlink(p) == str(self.current / name)):
                hook("adopt")
                _symlink_over(str(self.current / name), p)
        doc = json.dumps(_recorded(self.paths), indent=1) + "\n"
        write_atomic(self.state / PATHS, doc, mode=state_file_mode(self.state))

    def foreign_link_line(self) -> str | None:
        """One line naming a managed path that is a symlink out of the state directory (config
        management's `/etc/opensm/opensm.conf -> /srv/cm/opensm.conf`), or None. Adopting it
        would replace that link with ours: the file it named would silently stop being what
        OpenSM reads, and the path would still read `current` (no DRIFT to say so). A symlink
        loop is named as one."""
        for p in self.paths.values():
            if not p.is_symlink():
                continue
            try:
                target = Path(os.path.realpath(p, strict=True))
            except OSError as e:
                if e.errno == errno.ELOOP:
                    # realpath gives a loop's own path back: the advice was 'cp --remove-destination P P'
                    return (
                        f"{p}: a symlink loop ({p} -> {os.readlink(p)} never reaches a file): OpenSM reads "
                        "nothing there; remove it, or make it the file OpenSM should read, then apply again"
                    )
                target = Path(os.path.realpath(p))
            if target.is_relative_to(self.state.resolve()):
                continue  # ours, or the nested layout older ibqos made (adopt keeps its contents)
            return (
                f"{p}: a symlink to {target} (config management?): apply would replace it with its own "
                f"link into {self.current}, and {target} would no longer be what OpenSM reads: make {p} a "
                f"file ('cp --remove-destination {target} {p}'), or have config management write the "
                "files 'ibqos render' makes"
            )
        return None

    def managed_paths(self) -> dict[str, Path]:
        """The paths ibqos links into `current`, by role: as the last adoption recorded them
        (stores from before that record: the admin's files taken over as v0000)."""
        if self.paths:
            return self.paths
        try:
            doc = json.loads((self.state / PATHS).read_text())
        except (OSError, ValueError):
            doc = self.meta("v0000").adopted_from or {}
        return {str(n): Path(p) for n, p in doc.items()} if isinstance(doc, dict) else {}

    def drifted(self) -> dict[str, Path]:
        """Managed paths that read other bytes than `current` holds for them: the link was
        replaced (by a file of its own, or a symlink elsewhere) behind ibqos's back."""
        out = {}
        for name, p in self.managed_paths().items():
            mine = self.current / name
            if not mine.exists() or (p.is_symlink() and os.readlink(p) == str(mine)) or not p.exists():
                continue
            if p.read_bytes() != mine.read_bytes():
                out[name] = p
        return out

    def drift_line(self) -> str | None:
        """One line naming the managed paths that no longer read the current version, or None."""
        bad = self.drifted()
        if not bad:
            return None
        return (
            f"DRIFT: {', '.join(map(str, bad.values()))} no longer read{'s' if len(bad) == 1 else ''} "
            f"{self.current_version()} (the link into {self.current} was replaced by hand, e.g. by "
            "'sed -i'): OpenSM reads the edit at its next heavy sweep"
        )

    def damage_line(self) -> str | None:
        """What makes the managed paths read something other than the current version as ibqos
        stored it, in one line, or None: the version edited (TAMPERED), gone (BROKEN: every
        link dangles, e.g. its directory removed by hand) or bypassed (DRIFT)."""
        version = self.current_version()
        if version is not None and not (self.state / version).is_dir():
            stored = self.versions()
            fix = f"relink a stored version ('ln -sfn {stored[-1]} {self.current}')" if stored else "restore it"
            return (
                f"BROKEN: {self.current} points at {version}, which is not in {self.state}: every managed "
                f"path dangles and OpenSM reads none of them (at its next start it runs on its defaults): {fix}"
            )
        return self.tamper_line(version) or self.drift_line()

    def stage(
        self,
        files: dict[str, str],
        meta: VersionMeta,
        extra: dict[str, str] | None = None,
        name: str | None = None,
    ) -> str:
        """Write a new version directory (not yet current) and return its name. `extra` are
        files kept beside the managed ones (the plan, so a later command can verify it). Every
        file the current version holds must be in `files`: a version never leaves a managed
        path pointing at nothing."""
        left = [r for r in self.roles(self.current_version()) if r not in files]
        if left:
            raise ExternalError(f"{self.current} holds {', '.join(left)}, which the new version would drop")
        n = max((int(v[1:]) for v in self.versions()), default=0) + 1  # versions() holds only vNNNN
        name = name or f"v{n:04d}"
        modes = {r: (self.current / r).stat().st_mode & 0o7777 for r in self.paths if (self.current / r).exists()}
        self._write_version(name, {r: files[r] for r in self.paths}, meta, extra, modes)
        return name

    def _write_version(
        self,
        name: str,
        files: dict[str, str],
        meta: VersionMeta,
        extra: dict[str, str] | None = None,
        modes: dict[str, int] | None = None,
    ) -> None:
        """The one writer of a version: written in a hidden directory, made read-only with its
        manifest, then renamed into place (a crash leaves a `.vNNNN.tmp`, never half a version).
        A file `modes` gives no mode of its own (a role the admin had no file for, the plan, the
        meta and manifest) is as readable as opensm.conf, not as ibqos's umask makes it."""
        d = self.state / name
        tmp = self.state / f".{name}.tmp"
        _remove_tree(tmp)
        tmp.mkdir(parents=True)
        modes = modes or {}
        conf_mode = modes.get("opensm.conf")
        for fname, text in {**files, **(extra or {})}.items():
            # the admin's bytes as read (osmconf.read): CRLF, any encoding
            write_atomic(tmp / fname, osmconf.to_bytes(text), mode=modes.get(fname, conf_mode))
        write_atomic(tmp / "meta.json", meta.stamped_text(), mode=conf_mode)
        sums = {f.name: sha256_hex(f.read_bytes()) for f in sorted(tmp.iterdir())}
        write_atomic(tmp / MANIFEST, json.dumps({"sha256": sums}, indent=1) + "\n", mode=conf_mode)
        for f in tmp.iterdir():
            os.chmod(f, stat.S_IMODE(f.stat().st_mode) & ~0o222)
        fsync_dir(tmp)
        os.chmod(tmp, 0o555)
        os.replace(tmp, d)
        fsync_dir(self.state)

    def roles(self, version: str | None) -> list[str]:
        """The managed files a version holds (not its plan, meta or manifest)."""
        if version is None or not (self.state / version).is_dir():
            return []
        extra = {"meta.json", MANIFEST, "plan.json"}
        return sorted(f.name for f in (self.state / version).iterdir() if f.name not in extra)

    def meta(self, version: str) -> VersionMeta:
        """A version's meta.json (VersionMeta.read: a field edited by hand to another type is
        left out, and check() names the version TAMPERED)."""
        return VersionMeta.read(self.state / version / "meta.json")

    def absent(self, version: str | None) -> set[str]:
        """The roles `version` records as absent (module doc). A version of the admin's own
        files without the mark is from an ibqos before it (adopted_meta writes it always), which
        stored a missing file empty and restored it so, which OpenSM refuses for the QoS policy
        (ERR AC10: 'rollback v0000' after an upgrade failed on Debian's conf as shipped): there a
        file stored empty is one the admin lacked. An admin's own empty file OpenSM reads as
        none, or refuses."""
        if version is None:
            return set()
        meta = self.meta(version)
        if meta.absent is not None:
            return set(meta.absent)
        if meta.adopted_from is None:
            return set()
        base = self.state / version
        stored_empty = {n for n in meta.adopted_from if (base / n).is_file() and (base / n).stat().st_size == 0}
        return stored_empty - {"opensm.conf"}

    def check(self, version: str) -> list[str]:
        """Files of `version` that changed (or went missing) since ibqos wrote it, by its
        manifest. Every version ibqos writes has one (`_write_version`), so a manifest that is
        gone or unreadable is itself the change: without it nothing else could be checked."""
        try:
            sums = json.loads((self.state / version / MANIFEST).read_text())["sha256"]
            if not isinstance(sums, dict):
                raise ValueError("sha256 is not a map")
        except (OSError, ValueError, KeyError, TypeError):
            return [MANIFEST]
        bad = []
        for fname, want in sums.items():
            f = self.state / version / fname
            try:
                if sha256_hex(f.read_bytes()) != want:
                    bad.append(fname)
            except OSError:
                bad.append(fname)
        return bad

    def tamper_line(self, version: str | None) -> str | None:
        """One line naming the files of `version` changed since ibqos stored them, or None."""
        bad = self.check(version) if version else []
        if not bad or not version:
            return None
        if bad == [MANIFEST]:
            return (
                f"TAMPERED: {self.state / version} changed since ibqos wrote it (its {MANIFEST} is gone or "
                "unreadable, so nothing in it can be checked): edited by hand?"
            )
        return (
            f"TAMPERED: {self.state / version} changed since ibqos wrote it ({', '.join(bad)} differ from "
            f"its {MANIFEST}): edited by hand through the managed paths?"
        )

    def discard(self, version: str) -> None:
        _remove_tree(self.state / version)

    def originals(self) -> set[str]:
        """Versions holding the admin's own files: kept for good."""
        return {v for v in self.versions() if self.meta(v).adopted_from is not None}

    def flip(self, version: str) -> None:
        """The one atomic step: every managed path now reads `version`."""
        if not (self.state / version).is_dir():
            raise ExternalError(f"no configuration version {version} in {self.state}")
        _symlink_over(version, self.current)
        gone = self.absent(version)
        for name, p in self.managed_paths().items():
            if name in gone and p.is_symlink() and os.readlink(p) == str(self.current / name):
                # only ibqos's own link goes, never a file of the admin's: OpenSM runs without it again
                p.unlink()
                fsync_dir(p.parent)
            elif name not in gone and not os.path.lexists(p):
                _symlink_over(str(self.current / name), p)  # a version that holds it again

    def read(self, version: str | None = None) -> dict[str, str]:
        base = self.state / version if version else self.current
        return {role: osmconf.read(base / role) for role in self.paths}

    def prune(self, keep: int, protect: set[str]) -> list[str]:
        """Delete all but the newest `keep` version directories (never one in `protect`, e.g.
        current and the rollback target, nor the admin's originals); returns the names removed."""
        versions = self.versions()
        protect = protect | self.originals()
        drop = [v for v in versions[: max(0, len(versions) - keep)] if v not in protect]
        for v in drop:
            # rename first so a crash mid-delete leaves a hidden leftover, never a half version
            doomed = self.state / f".{v}.del"
            os.replace(self.state / v, doomed)
            _remove_tree(doomed)
            self.verified_fabric(v).unlink(missing_ok=True)
        if drop:
            fsync_dir(self.state)
        for p in self.state.glob(".v*.del"):
            _remove_tree(p)
        return drop

    def cleanup_staging(self) -> None:
        for p in self.state.glob(".v*.tmp"):
            _remove_tree(p)
