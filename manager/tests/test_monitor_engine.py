"""`ibqos monitor` names the routing engine in force every interval (OpenSM's log, else dla's
record). It reads a file again only when it changed, and the log only past where it last
looked; a log rotated (another file at the path) or truncated in place (OpenSM's
log_max_size) is read again from its start, so the engine named is always what a full read
of the files would name (health.engine_of, as `ibqos status` names it)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from ibqos import osmlog
from ibqos.fabric import dla_record
from ibqos.health import engine_of
from ibqos.monitor.engine import EngineWatch

N = 0


def logged(engine: str | None = None, filler: int = 3) -> str:
    """OpenSM log lines: `filler` unrelated ones, then (if given) `engine` configuring the tables."""
    global N
    out = []
    for _ in range(filler):
        N += 1
        out.append(f"Nov 24 10:00:{N % 60:02d} {N:06d} [1AE606C0] 0x02 -> osm_state_mgr_process: sweep {N}\n")
    if engine:
        N += 1
        out.append(
            f"Nov 24 10:01:{N % 60:02d} {N:06d} [1AE606C0] 0x02 -> osm_ucast_mgr_process: "
            f"{engine} tables configured on all switches\n"
        )
    return "".join(out)


def record(status: str) -> str:
    return json.dumps(
        {
            "schema": "ibqos.dla-record/2",
            "osm_pid": 1,
            "heavy_sweeps": 1,
            "subnet_up": 1,
            "state": "up",
            "sweep": 1,
            "engine": {"status": status},
            "table_file": {"status": "none"},
            "ports_complete": True,
            "ports": [],
        }
    )


def full_read(conf: Path | None, log: Path) -> str | None:
    """The engine as a fresh read of both files names it (what monitor did every interval)."""
    rec = dla_record.read_record(conf.parent / "dumps") if conf is not None else None
    return engine_of(osmlog.parse(log), rec)


@pytest.fixture
def files(tmp_path):
    (tmp_path / "dumps").mkdir()
    conf = tmp_path / "opensm.conf"
    conf.write_text(f"dump_files_dir {tmp_path / 'dumps'}\n")
    return conf, tmp_path / "osm.log", tmp_path / "dumps" / dla_record.RECORD_FILE


def test_a_rotated_or_truncated_log_is_still_read_right(files):
    conf, log, rec = files
    watch = EngineWatch(conf, log)
    assert watch.engine() is None  # no log, no record yet
    log.write_text(logged("minhop"))
    assert watch.engine() == "minhop"
    with log.open("a") as f:
        f.write(logged("dla"))
    assert watch.engine() == "dla"
    text = logged("dfsssp")
    with log.open("a") as f:  # a line still being written: not read until it is whole
        f.write(text[:-20])
    assert watch.engine() == "dla"
    with log.open("a") as f:
        f.write(text[-20:])
    assert watch.engine() == "dfsssp" == full_read(conf, log)

    # Each case below is told from an appended log by one sign only (LogMark), and a reader
    # that missed it would read on from the old end and name the old engine:
    # log_max_size: OpenSM truncates the file in place (same inode) and logs on from byte 0,
    # here longer than before: only the first line tells it from the old log
    ino = log.stat().st_ino
    _rewrite(log, logged("updn", filler=0) + logged(None, filler=40))
    assert log.stat().st_ino == ino and watch.engine() == "updn" == full_read(conf, log)
    head = _first_lines(log, 256)  # the log's first lines, past osmlog's 256-byte head
    # truncated to a log that begins as the last one did but is shorter: only the size tells
    _rewrite(log, head + logged("ftree", filler=0))
    assert watch.engine() == "ftree" == full_read(conf, log)
    # logrotate: another file at the path, beginning as the old one and longer: only the inode
    os.rename(log, log.with_suffix(".log.1"))
    log.write_text(head + logged("lash", filler=0) + logged(None, filler=40))
    assert watch.engine() == "lash" == full_read(conf, log)
    # truncated to lines that name no engine: the old log's are gone, dla's record names it
    _rewrite(log, logged(None))
    rec.write_text(record("routed"))
    assert watch.engine() == "dla" == full_read(conf, log)
    os.rename(log, log.with_suffix(".log.2"))
    log.write_text(logged(None))  # a fresh log that names nothing yet; dla's record refused
    rec.write_text(record("refused"))
    assert watch.engine() is None and full_read(conf, log) is None
    log.unlink()
    rec.write_text(record("routed"))
    assert watch.engine() == "dla"


def _first_lines(log: Path, nbytes: int) -> str:
    out = ""
    for line in log.read_text().splitlines(keepends=True):
        if len(out) >= nbytes:
            break
        out += line
    return out


def _rewrite(log: Path, text: str) -> None:
    """As OpenSM's log_max_size does: the same file, emptied, then written from byte 0."""
    with log.open("r+") as f:
        f.truncate(0)
        f.write(text)


def test_files_are_read_again_only_when_they_changed(files, monkeypatch):
    conf, log, rec = files
    log.write_text(logged(None))
    rec.write_text(record("routed"))
    reads: list[tuple[str, object]] = []
    for mod, name in ((osmlog, "parse_text"), (dla_record.DlaRecord, "model_validate_json")):
        real = getattr(mod, name)
        monkeypatch.setattr(mod, name, lambda arg, _r=real, _n=name: reads.append((_n, arg)) or _r(arg))
    watch = EngineWatch(conf, log)
    assert [watch.engine() for _ in range(5)] == ["dla"] * 5
    assert [r[0] for r in reads] == ["parse_text", "model_validate_json"], reads
    with log.open("a") as f:
        f.write(logged(None))
    assert watch.engine() == "dla" and [r[0] for r in reads[2:]] == ["parse_text"], reads
    text = logged("minhop")
    with log.open("a") as f:
        f.write(text)
    # only the appended part was parsed, and the record is not read while the log names the engine
    assert watch.engine() == "minhop" and reads[3:] == [("parse_text", text)], reads[3:]
    assert [watch.engine() for _ in range(3)] == ["minhop"] * 3 and len(reads) == 4
    rec.write_text(record("refused"))  # a changed record is read again when the log names nothing
    _rewrite(log, logged(None))
    assert watch.engine() is None and [r[0] for r in reads[4:]] == ["parse_text", "model_validate_json"], reads


def test_a_fifo_as_the_log_is_bad_input(files):
    conf, log, _ = files
    os.mkfifo(log)
    with pytest.raises(osmlog.InputError, match="not a regular file"):
        EngineWatch(conf, log).engine()


def test_an_admins_latin1_crlf_conf_is_read_as_opensm_reads_it(files):
    """The conf `ibqos apply` keeps byte for byte (a Latin-1 comment, CRLF endings) names the
    record's directory to monitor too; a strict UTF-8 read refused it as bad input (exit 2)."""
    conf, log, rec = files
    text = conf.read_text().rstrip("\n")
    conf.write_bytes(b"# r\xe9glage du site\r\n" + text.encode() + b"\n")
    log.write_text(logged(None))
    rec.write_text(record("routed"))
    assert EngineWatch(conf, log).engine() == "dla"


def test_a_log_that_becomes_unreadable_during_a_run_names_no_engine_and_is_said_once(files):
    """logrotate creating the new log 0600 for root while the monitor runs as another user, or
    anything not a regular file put at the path: engine() raised its InputError in the
    sampling loop and the monitor ended with exit 2. During a run it names no engine (not the
    last one read), says so once, and names it again when the log can be read."""
    conf, log, _ = files
    said: list[str] = []
    watch = EngineWatch(conf, log, warn=said.append)
    log.write_text(logged("minhop"))
    assert watch.current() == "minhop"
    os.rename(log, log.with_suffix(".log.1"))
    os.mkfifo(log)
    assert [watch.current() for _ in range(3)] == [None] * 3
    assert said == [f"ibqos: error: {log}: not a regular file"], said
    log.unlink()
    log.write_text(logged("updn"))
    assert watch.current() == "updn" and len(said) == 1
    log.unlink()
    os.mkfifo(log)
    with pytest.raises(osmlog.InputError):  # at start the same file is bad input (exit 2)
        EngineWatch(conf, log).engine()
