"""An opensm.conf as admins leave it: `opensm -c` output edited by hand with CRLF line
endings, a Latin-1 comment, quoted values, duplicate keys and tabs. ibqos reads it as OpenSM
3.3.23 does (osm_subnet.c; the oracle here is OpenSM itself, `opensm -F FILE -c OUT`, which
writes back what it parsed), applies a plan over it with every line it does not own kept byte
for byte, and refuses, before writing anything, a file whose `event_plugin_options` is
`(null)`, where OpenSM gives the plugin no table file."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from apply_helpers import (
    live_sm,  # noqa: F401 (fixture)
    make_plan_file,
    managed_texts,
    opensm_restarted,
    programmed_equals,
    run_apply,
    sm_on_plan_a,
    state_tree,
)
from ibqos import osmconf
from ibqos.fabric.dla_record import own_record
from ibqos.proc import run_command, wait_until
from ibqos.render import render_plan
from ibqos_app.apply.run import Apply, ApplyRequest
from ibqos_sim.harness.diags import saquery_ipoib_broadcast_sls
from tree_snapshot import changes, snapshot

pytestmark = pytest.mark.fabric


def opensm_reads(conf: Path, tmp: Path) -> dict[str, str]:
    """What OpenSM parsed from `conf`, as the canonical file `opensm -c` writes of it."""
    out = tmp / "opensm-read.conf"
    run_command(["opensm", "-F", str(conf), "-c", str(out)], timeout=60, cwd=tmp)
    lines = out.read_text().split("\n")
    return dict(ln.split(" ", 1) for ln in lines if ln and not ln.startswith("#") and " " in ln)


HOSTILE = (
    "# Site conf, Ma\xeetrise r\xe9seau (Latin-1)\r\n"
    "sweep_interval 30\r\n"
    "sweep_interval\t\t17   # the last one counts\r\n"
    '\r\nqos_policy_file "/etc/opensm/my qos.conf"\r\n'
    "event_plugin_options  '/etc/opensm/ibqos-tables.conf'  \r\n"
    "log_file /var/log/site#1.log\r\n"
    "routing_engine\tdla,minhop\r\n"
)


def test_options_are_read_as_opensm_reads_them(tmp_path):
    conf = tmp_path / "admin.conf"
    conf.write_bytes(HOSTILE.encode("latin-1"))
    theirs = opensm_reads(conf, tmp_path)
    ours = osmconf.parse(osmconf.read(conf))
    for key in ("sweep_interval", "qos_policy_file", "event_plugin_options", "log_file", "routing_engine"):
        assert ours[key] == theirs[key], key
    assert ours["qos_policy_file"] == "/etc/opensm/my qos.conf"  # the oracle is not vacuous
    assert ours["log_file"] == "/var/log/site"


@pytest.mark.parametrize(
    ("text", "key", "value", "line"),
    [
        # fgets: a line longer than 1022 bytes is read in pieces, each a line to OpenSM
        ("#" + "x" * 1021 + "qos_policy_file /etc/opensm/from-the-tail.conf\n", "qos_policy_file", None, 1),
        # strchr, strtok_r: a NUL ends the line
        ("sweep_interval 9\nevent_plugin_name ibqos\0 stale\n", "event_plugin_name", "ibqos", 2),
    ],
    ids=["long-line", "nul"],
)
def test_lines_opensm_reads_otherwise_than_they_look_are_read_as_opensm_reads_them(tmp_path, text, key, value, line):
    """hostile36: the tail of a long comment set an option ibqos did not see (it read the
    default qos_policy_file, OpenSM the tail's); a NUL byte left the rest of its line in the
    value ('ibqos\\0 stale': apply said OpenSM does not load the plugin, exit 3)."""
    conf = tmp_path / "admin.conf"
    conf.write_bytes(text.encode())
    theirs = opensm_reads(conf, tmp_path)
    assert theirs[key] == (value or "/etc/opensm/from-the-tail.conf")  # the oracle
    assert osmconf.parse(osmconf.read(conf))[key] == theirs[key]
    assert osmconf.line_of(osmconf.read(conf), key) == line


def test_a_crlf_line_cut_just_before_its_end_is_no_line_to_refuse():
    """hostile36: a CRLF line of 1022 bytes before its '\\r\\n' leaves OpenSM a piece '\\r\\n',
    the token '\\r' it ignores (as a CRLF file's blank line); only a piece with a key in it is
    a line OpenSM reads that the file does not show."""
    assert osmconf.cut_line("#" + "x" * 1021 + "\r\n") is None
    assert osmconf.cut_line("#" + "x" * 1021 + " \t\n") is None
    assert osmconf.cut_line("#" + "x" * 1021 + "lmc 1\r\n") == ("#" + "x" * 1021 + "lmc 1\r\n", "lmc")


def test_a_nul_byte_in_the_admins_conf_ends_the_line_as_it_does_for_opensm(ibqos_cli, live_sm, tmp_path):
    """hostile36: a NUL byte (a binary paste, a broken editor) in the admin's opensm.conf. OpenSM
    reads each line up to it. ibqos read the rest of the line into the value: 'event_plugin_name
    ibqos\\0 stale' was refused as an OpenSM without the plugin (exit 3), and a qos_policy_file
    with one swapped the new version in, then stopped on the path's link with 'internal error:
    ValueError: embedded null byte' (exit 70). Now both apply, the admin's line kept as it was."""
    h, sm, _plan_a, _ = live_sm
    plan_b, path_b = make_plan_file(tmp_path, "b", 60)
    plugin = "event_plugin_name ibqos"
    text = re.sub(r"(qos_policy_file \S+)", "\\1\0.orig", sm.conf.read_text())
    assert plugin in text and "\0.orig" in text
    sm.conf.write_text(text.replace(plugin, plugin + "\0 stale"))
    cp = run_apply(ibqos_cli, h, sm, path_b)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert programmed_equals(h, plan_b)
    assert f"\n{plugin}\0 stale\n".encode() in sm.conf.read_bytes()


@pytest.mark.parametrize(
    ("eol", "comment", "size", "key"),
    [("\n", "# " + "site notes " * 150, 1652, "es"), ("\r\n", "#" + "-" * 1500, 1501, "-" * 40)],
)
def test_a_long_comment_opensm_reads_in_pieces_is_named_at_its_line(
    ibqos_cli, live_sm, tmp_path, eol, comment, size, key
):
    """hostile36: a comment longer than OpenSM's 1022-byte line buffer: OpenSM parses its tail
    as a key ('Unrecognized token'). apply named no line, and a key 'es' the file does not show;
    for a long rule of dashes in a CRLF file it printed 9 lines of OpenSM's output (the token's
    pattern ran on past OpenSM's message, cut short without its closing quote). Now one line
    naming the admin's line and what OpenSM reads there, exit 2, nothing written."""
    h, sm, _plan_a, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    text = sm.conf.read_text().split("\n")
    text.insert(2, comment)
    sm.conf.write_bytes(eol.join(text).encode())
    skip = ("osm.log", "dumps", "dumps/ibqos-dla.json", ".", "ibqos.d", "ibqos.d/apply.lock")
    before = snapshot(sm.conf.parent, skip=skip)
    for extra in ((), ("--dry-run",)):
        cp = run_apply(ibqos_cli, h, sm, path_b, *extra)
        assert cp.returncode == 2, cp.stdout + cp.stderr
        assert cp.stderr.splitlines() == [
            f"ibqos: error: {sm.conf}:3: a line of {size} bytes: OpenSM 3.3.23 reads a line 1022 bytes at a "
            f"time and takes {key!r} after byte 1022 as a line of its own; shorten the line"
        ], cp.stderr
        assert changes(before, snapshot(sm.conf.parent, skip=skip)) == []


def _admin_edit(text: str) -> bytes:
    """The harness's opensm.conf as an admin's editor leaves it: CRLF, a Latin-1 comment, a
    quoted path, a duplicate key (the last one counts), tabs; the values OpenSM runs with
    are unchanged."""
    out = ["# Ma\xeetrise r\xe9seau: edited by hand", "sweep_interval 30"]
    for line in text.split("\n"):
        m = re.match(r"(qos_policy_file|event_plugin_options) (\S+)$", line)
        out.append(f'{m.group(1)}\t"{m.group(2)}"   # quoted by the admin' if m else line)
    return "\r\n".join(out).encode("latin-1")


def test_an_edited_crlf_latin1_conf_is_applied_and_kept_byte_for_byte(ibqos_cli, live_sm, tmp_path):
    h, sm, _plan_a, _ = live_sm
    plan_b, path_b = make_plan_file(tmp_path, "b", 60)
    original = _admin_edit(sm.conf.read_text())
    sm.conf.write_bytes(original)

    cp = run_apply(ibqos_cli, h, sm, path_b)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert programmed_equals(h, plan_b)

    state = sm.conf.parent / "ibqos.d"
    assert (state / "v0000" / "opensm.conf").read_bytes() == original  # the admin's own file, whole
    new = sm.conf.read_bytes()
    assert new.count(b"\n") == new.count(b"\r\n")  # still a CRLF file

    # every line whose key the plan does not set, in order and byte for byte
    def owned(line: bytes) -> bool:  # the options a plan sets (templates/opensm.conf.j2)
        key = line.split()[0].decode("latin-1") if line.split() else ""
        return key.startswith("qos") or key in ("max_op_vls", "force_log_flush", "nue_max_num_vls")

    kept = [ln for ln in original.split(b"\r\n") if not owned(ln)]
    new_lines = iter(new.split(b"\r\n"))
    missing = [ln for ln in kept if not any(ln == n for n in new_lines)]
    assert missing == []
    assert opensm_reads(sm.conf, tmp_path)["sweep_interval"] == "2"  # the harness's, last: still in force


def test_a_null_table_path_is_refused_before_anything_is_written(ibqos_cli, live_sm, tmp_path):
    h, sm, _plan_a, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    text = sm.conf.read_text()
    sm.conf.write_text(re.sub(r"(?m)^event_plugin_options .*$", "event_plugin_options (null)", text))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    # OpenSM's own log and dumps live beside its conf here; a refused apply makes nothing, its lock
    # included (test_apply_lock)
    skip = ("osm.log", "dumps", "dumps/ibqos-dla.json", ".")
    before = snapshot(sm.conf.parent, skip=skip), snapshot(cwd)
    args = ("apply", path_b, "--opensm-conf", sm.conf, "--pid", sm.pid, "--sim-socket", h.sock)
    cp = ibqos_cli(*args, cwd=cwd, env=dict(os.environ))
    assert cp.returncode == 3, cp.stdout + cp.stderr
    assert "event_plugin_options is '(null)'" in cp.stderr and "restart OpenSM once" in cp.stderr
    assert changes(before[0], snapshot(sm.conf.parent, skip=skip)) == []
    assert changes(before[1], snapshot(cwd)) == []  # no "(null)" table file where it ran
    assert not sm.conf.is_symlink()


@pytest.mark.parametrize("value", ["1", "0x2"])
def test_lmc_above_0_is_refused_for_a_dla_plan_before_anything_is_written(ibqos_cli, live_sm, tmp_path, value):
    """redteam: a site's multipathing (`lmc 1`, or 0x2 as OpenSM's strtoul reads it) makes dla
    refuse every sweep (ERR D1A1) and OpenSM route with the fallback, on its path SLs: apply
    went on (or rolled back after a sweep); it now says why before it changes anything."""
    h, sm, _plan_a, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    sm.conf.write_text(sm.conf.read_text() + f"lmc {value}\n")
    skip = ("osm.log", "dumps", "dumps/ibqos-dla.json", ".")
    before = snapshot(sm.conf.parent, skip=skip)
    cp = run_apply(ibqos_cli, h, sm, path_b)
    assert cp.returncode == 3, cp.stdout + cp.stderr
    line = cp.stderr.strip().splitlines()[-1]
    assert line == (
        f"ibqos: error: {sm.conf}: lmc is {value!r}, but dla routes one LID per port: it would refuse the "
        "fabric and OpenSM route it with dfsssp, lash, nue instead, without the plan's classes; set lmc 0 "
        "and restart OpenSM, then apply"
    ), cp.stderr
    assert changes(before, snapshot(sm.conf.parent, skip=skip)) == []
    # lmc 9 is no LMC to OpenSM (above 7: its default 0), so nothing to refuse
    sm.conf.write_text(sm.conf.read_text().replace(f"lmc {value}\n", "lmc 9\n"))
    cp = run_apply(ibqos_cli, h, sm, path_b)
    assert cp.returncode == 0, cp.stdout + cp.stderr


def test_an_unset_qos_policy_file_outside_etc_opensm_is_refused_before_anything_is_written(
    ibqos_cli, live_sm, tmp_path
):
    """Unset, OpenSM reads its compiled-in /etc/opensm/qos-policy.conf wherever its conf lives:
    a policy written beside a conf elsewhere would never be read (before: written there, then
    the sweep's read-back differed and apply rolled back with 'tables differ')."""
    h, sm, _plan_a, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    sm.conf.write_text(re.sub(r"(?m)^qos_policy_file .*\n", "", sm.conf.read_text()))
    default = Path("/etc/opensm/qos-policy.conf")
    etc_before = default.stat() if default.exists() else None
    skip = ("osm.log", "dumps", "dumps/ibqos-dla.json", ".")
    before = snapshot(sm.conf.parent, skip=skip)
    args = ("apply", path_b, "--opensm-conf", sm.conf, "--pid", sm.pid, "--sim-socket", h.sock)
    cp = ibqos_cli(*args, env=dict(os.environ))
    assert cp.returncode == 3, cp.stdout + cp.stderr
    assert f"qos_policy_file is unset, so OpenSM reads {default}" in cp.stderr, cp.stderr
    assert len(cp.stderr.strip().splitlines()) == 1
    assert changes(before, snapshot(sm.conf.parent, skip=skip)) == []
    assert (default.stat() if default.exists() else None) == etc_before


def opensm_c_conf(tmp_path: Path) -> tuple[Path, str]:
    """`opensm -c`'s whole opensm.conf, its paths under tmp_path, ready for a dla plan (the
    plugin and its table file, dla's engine chain): (path, text, not yet written)."""
    conf = tmp_path / "opensm.conf"
    run_command(["opensm", "-c", str(conf)], timeout=60, cwd=tmp_path)
    text = conf.read_text().replace("/etc/opensm/", f"{tmp_path}/")
    for key, value in (("event_plugin_name", "ibqos"), ("routing_engine", "dla,dfsssp,lash,nue")):
        text = text.replace(f"{key} (null)", f"{key} {value}")
    return conf, text.replace("event_plugin_options (null)", f"event_plugin_options {tmp_path}/tables.conf")


def test_the_preview_of_a_latin1_conf_prints_on_a_utf8_terminal(ibqos_cli, tmp_path):
    """The diff shows a byte that is not UTF-8 escaped, on a terminal whose encoding is strict
    UTF-8 (PYTHONIOENCODING stands in for an en_US.UTF-8 locale)."""
    conf, text = opensm_c_conf(tmp_path)
    plan = make_plan_file(tmp_path, "a", 40)[1]
    conf.write_bytes(text.replace("qos FALSE", "# r\xe9glage du site\nqos FALSE").encode("latin-1"))
    cp = ibqos_cli(
        "apply", plan, "--opensm-conf", conf, "--dry-run", env=dict(os.environ, PYTHONIOENCODING="utf-8:strict")
    )
    assert cp.returncode == 0, cp.stderr
    assert " # r\\xe9glage du site\n-qos FALSE\n+qos TRUE" in cp.stdout


def test_a_latin1_value_opensm_echoes_is_applied_and_kept_byte_for_byte(ibqos_cli, tmp_path):
    """redsm: `opensm -c`, the check every apply runs, echoes each option it loads ('Loading
    Cached Option:node_name_map_name = /etc/opensm/n\xe9uds.map'), in the file's own bytes. A
    Latin-1 value there made apply, its dry run and --standby stop with 'ibqos: error: input is
    not UTF-8 (byte N)', exit 2, naming no file (OpenSM's output was decoded as strict
    UTF-8), although OpenSM runs that file. Now the preview shows it and --standby keeps it."""
    conf, text = opensm_c_conf(tmp_path)
    plan = make_plan_file(tmp_path, "a", 40)[1]
    site = f"node_name_map_name {tmp_path}/n\xe9uds.map"
    original = text.replace("node_name_map_name (null)", site).encode("latin-1")
    conf.write_bytes(original)
    cp = ibqos_cli("apply", plan, "--opensm-conf", conf, "--dry-run", env=dict(os.environ))
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert f"changed: {conf}" in cp.stdout
    cp = ibqos_cli("apply", plan, "--opensm-conf", conf, "--standby", env=dict(os.environ))
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert site.encode("latin-1") + b"\n" in conf.read_bytes()
    assert (tmp_path / "ibqos.d" / "v0000" / "opensm.conf").read_bytes() == original


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("sweep_intervall 10", "OpenSM 3.3.23 does not know this option (it logs 'Unrecognized token' and ignores"),
        ("sweep_interval 10s", "OpenSM cannot read '10s' (it logs '-E- Parsing error in field sweep_interval"),
    ],
)
def test_a_line_opensm_cannot_read_is_named_at_its_line_in_the_admins_conf(ibqos_cli, live_sm, tmp_path, line, says):
    """redsm: OpenSM's parser (`opensm -c`, run on the merged file) finds a typo in a line the
    admin wrote. Before, the one line named the check's scratch copy, gone by then, and no line
    ('/tmp/ibqos-validate-15z09s55/opensm.conf: OpenSM rejects it: Unrecognized token: ...'),
    exit 3 as if OpenSM had failed. Now FILE:LINE: key: reason in the admin's file, exit 2,
    nothing written (the dry run alike)."""
    h, sm, _plan_a, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    text = sm.conf.read_text().split("\n")
    text.insert(3, line)  # among the admin's own lines, above the ones the plan sets
    sm.conf.write_text("\n".join(text))
    skip = ("osm.log", "dumps", "dumps/ibqos-dla.json", ".")
    before = snapshot(sm.conf.parent, skip=skip)
    for extra in ((), ("--dry-run",)):
        cp = run_apply(ibqos_cli, h, sm, path_b, *extra)
        assert cp.returncode == 2, cp.stdout + cp.stderr
        assert len(cp.stderr.splitlines()) == 1, cp.stderr
        assert cp.stderr.startswith(f"ibqos: error: {sm.conf}:4: {line.split()[0]}: {says}"), cp.stderr
        assert changes(before, snapshot(sm.conf.parent, skip=skip)) == []


def test_a_conf_saved_with_a_byte_order_mark_is_applied_unless_it_hides_a_key(ibqos_cli, live_sm, tmp_path):
    """redsm: an editor that saves UTF-8 with a byte-order mark puts EF BB BF before the first
    line. Before a comment OpenSM logs 'Unrecognized token' for it and runs the file as it is;
    apply took that for a rejection and refused the file (exit 3). Now it is applied, the mark
    kept. Before a key OpenSM ignores that line (it reads the mark as part of the key): one line
    naming line 1 and the key, exit 2."""
    h, sm, _plan_a, _ = live_sm
    plan_b, path_b = make_plan_file(tmp_path, "b", 60)
    text = sm.conf.read_bytes()
    assert text.startswith(b"#")
    sm.conf.write_bytes(b"\xef\xbb\xbfsweep_interval 7\n" + text)
    cp = run_apply(ibqos_cli, h, sm, path_b)
    assert cp.returncode == 2, cp.stdout + cp.stderr
    assert cp.stderr.splitlines() == [
        f"ibqos: error: {sm.conf}:1: sweep_interval: a UTF-8 byte-order mark before the key: OpenSM reads "
        "it as part of the key and ignores this line; save the file without it"
    ], cp.stderr
    assert opensm_reads(sm.conf, tmp_path).get("sweep_interval") != "7"  # the oracle: OpenSM ignores it
    sm.conf.write_bytes(b"\xef\xbb\xbf" + text)
    cp = run_apply(ibqos_cli, h, sm, path_b)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert programmed_equals(h, plan_b)
    assert sm.conf.read_bytes().startswith(b"\xef\xbb\xbf#")
    assert (sm.conf.parent / "ibqos.d" / "v0000" / "opensm.conf").read_bytes() == b"\xef\xbb\xbf" + text


@pytest.mark.skipif(os.geteuid() != 0, reason="reads the files as another user (setpriv)")
def test_an_apply_under_a_strict_umask_leaves_the_files_readable_as_the_admins_were(ibqos_cli):
    """redsm: root's umask on a hardened host is 077. The apply made ibqos.d/ 0700 and the new
    files 0400 (the qos policy, the table file): every managed path is a link in there, so an
    OpenSM run as another user, which read the admin's 0644 opensm.conf, could read none of
    them ('cannot open file ...: Permission denied', 'Fail to parse config file'). Now ibqos.d/
    is as open as the conf's directory and each file as readable as the admin's opensm.conf,
    the journal and history as ibqos.d/ (status and history as a monitoring user failed with
    'journal.json: Permission denied', exit 2). The oracle is OpenSM's parser run as nobody;
    the standby's apply writes the same version."""
    root = Path(tempfile.mkdtemp(prefix="ibqos-umask-"))  # pytest's own tmp is 0700
    try:
        root.chmod(0o755)
        conf, text = opensm_c_conf(root)
        conf.write_text(text)
        conf.chmod(0o644)
        plan_b, path_b = make_plan_file(root, "b", 60)
        mask = os.umask(0o077)
        try:
            cp = ibqos_cli("apply", path_b, "--opensm-conf", conf, "--standby", env=dict(os.environ))
        finally:
            os.umask(mask)
        assert cp.returncode == 0, cp.stdout + cp.stderr
        out = root / "nobody"
        out.mkdir(mode=0o777)
        out.chmod(0o777)
        nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        run_command([*nobody, "opensm", "-F", str(conf), "-c", str(out / "read.conf")], timeout=60, cwd=out)
        theirs = dict(ln.split(" ", 1) for ln in (out / "read.conf").read_text().split("\n") if " " in ln)
        want = osmconf.parse(render_plan(plan_b, root / "cfg-b")["opensm.conf"].read_text())
        assert theirs["qos_ca_vlarb_high"] == want["qos_ca_vlarb_high"]  # the plan's, read as nobody
        opts = osmconf.options(conf)
        for key in ("qos_policy_file", "event_plugin_options"):
            cp = run_command([*nobody, "cat", opts[key]], timeout=60, cwd=out)
            assert cp.stdout == Path(opts[key]).read_text() != ""
        # and a monitoring user reads the store as docs/sm-hosts.md says (journal, history)
        for cmd in ("status", "history"):
            cp = run_command([*nobody, *ibqos_cli.argv, cmd, "--opensm-conf", str(conf)], timeout=120, cwd=out)
            assert "v0001" in cp.stdout, cp.stdout + cp.stderr
    finally:
        shutil.rmtree(root)


@pytest.mark.parametrize("role", ["opensm.conf", "qos_policy_file"])
def test_a_managed_path_that_config_management_links_elsewhere_is_refused_untouched(ibqos_cli, live_sm, tmp_path, role):
    """/etc/opensm/opensm.conf -> /srv/cm/opensm.conf (Puppet, Ansible, a git checkout): the
    swap makes every managed path a link into ibqos.d/current, which would have replaced the
    admin's link, so the file config management writes would no longer be what OpenSM reads,
    and nothing would say so (the path reads `current`: no DRIFT). Refused in one line, before
    anything is written, by apply and by its dry run alike."""
    h, sm, _plan_a, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    cm = tmp_path / "srv" / "cm"
    cm.mkdir(parents=True)
    path = sm.conf if role == "opensm.conf" else Path(osmconf.options(sm.conf)["qos_policy_file"])
    target = cm / path.name
    path.rename(target)
    path.symlink_to(target)
    skip = ("osm.log", "dumps", "dumps/ibqos-dla.json", ".")
    before = snapshot(sm.conf.parent, skip=skip), snapshot(cm)
    args = ("apply", path_b, "--opensm-conf", sm.conf, "--pid", sm.pid, "--sim-socket", h.sock)
    for extra in ((), ("--dry-run",)):
        cp = ibqos_cli(*args, *extra, env=dict(os.environ))
        assert cp.returncode == 3, cp.stdout + cp.stderr
        assert cp.stderr.splitlines() == [
            f"ibqos: error: {path}: a symlink to {target} (config management?): apply would replace it "
            f"with its own link into {sm.conf.parent / 'ibqos.d' / 'current'}, and {target} would no longer "
            f"be what OpenSM reads: make {path} a file ('cp --remove-destination {target} {path}'), or have "
            "config management write the files 'ibqos render' makes"
        ], cp.stderr
        assert changes(before[0], snapshot(sm.conf.parent, skip=skip)) == []
        assert changes(before[1], snapshot(cm)) == []
        assert path.readlink() == target


def test_the_policy_file_opensm_is_given_on_its_command_line_is_the_one_applied(ibqos_cli, live_sm, tmp_path):
    """`opensm -Y FILE` (--qos_policy_file) beats opensm.conf's qos_policy_file, and OpenSM
    never re-reads that path. Before, apply wrote the plan's QoS policy to the file's path,
    which OpenSM does not read, and verified (the read-back holds SL2VL and VLArb, not the
    policy's qos-levels): exit 0 with the old policy in force. Now the path the command line
    gives is the managed one, and the admin's qos_policy_file line stays as it was."""
    h, sm, _plan_a, _ = live_sm
    plan_b, path_b = make_plan_file(tmp_path, "b", 60)
    conf_line = next(ln for ln in sm.conf.read_text().splitlines() if ln.startswith("qos_policy_file "))
    in_conf = Path(osmconf.options(sm.conf)["qos_policy_file"])
    site = tmp_path / "site-qos.conf"
    site.write_bytes(in_conf.read_bytes())
    with opensm_restarted(h, sm, tmp_path / "osm", "-Y", "../site-qos.conf") as osm:  # relative to its cwd
        args = ("apply", path_b, "--opensm-conf", sm.conf, "--pid", osm.pid, "--sim-socket", h.sock)
        cp = ibqos_cli(*args, "--dry-run", env=dict(os.environ))  # the preview shows that file too
        assert cp.returncode == 0 and f"changed: {tmp_path / 'osm' / '../site-qos.conf'}\n" in cp.stdout, cp.stdout
        cp = ibqos_cli(*args, env=dict(os.environ))
        assert cp.returncode == 0, cp.stdout + cp.stderr
        want = render_plan(plan_b, tmp_path / "cfg-b")["qos-policy.conf"].read_text()
        assert site.read_text() == want  # what OpenSM reads
        assert site.is_symlink() and in_conf.read_text() != want  # managed; the conf's path untouched
        assert conf_line in sm.conf.read_text().splitlines()


def test_a_relative_log_file_is_the_running_opensms(ibqos_cli, live_sm, tmp_path):
    """opensm.conf's `log_file opensm.log`, OpenSM started without -f in its own directory:
    apply reads the sweep's errors from the log there (the journal names it). Before, from
    ./opensm.log of its own working directory, where OpenSM never logs."""
    h, sm, _plan_a, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    text = sm.conf.read_text()
    log_line = next(ln for ln in text.splitlines() if ln.startswith("log_file "))
    sm.conf.write_text(text.replace(log_line, "log_file opensm.log"))
    elsewhere, osm_cwd = tmp_path / "admin", tmp_path / "osm"
    elsewhere.mkdir()
    with opensm_restarted(h, sm, osm_cwd, log=False) as osm:
        args = ("apply", path_b, "--opensm-conf", sm.conf, "--pid", osm.pid, "--sim-socket", h.sock)
        cp = ibqos_cli(*args, cwd=elsewhere, env=dict(os.environ))
        assert cp.returncode == 0, cp.stdout + cp.stderr
    last = json.loads((sm.conf.parent / "ibqos.d" / "history.jsonl").read_text().splitlines()[-1])
    assert last["log"] == str(osm_cwd / "opensm.log"), last


def test_an_admins_per_port_kind_qos_lines_do_not_outlive_the_plan(tmp_path):
    """OpenSM 3.3.23 programs each port kind from its qos_ca_/qos_sw0_/qos_swe_/qos_rtr_*
    options, falling back to qos_* only where one is unset (subn_verify_qos_set). apply
    rewrites what the plan renders and keeps every other line: the plan rendered no qos_rtr_*,
    so an admin's old `qos_rtr_vlarb_high` stayed and OpenSM would program router ports with
    it, not with the plan. OpenSM's own parser (`opensm -c`) is the oracle: every per-kind
    option it reads from the applied file is the plan's."""
    plan_b, path_b = make_plan_file(tmp_path, "b", 60)
    plan_files = render_plan(plan_b, tmp_path / "cfg-b")
    etc = tmp_path / "etc"
    etc.mkdir()
    stale = "0:1,1:1,2:1,3:1"
    kinds = ("qos", "qos_ca", "qos_sw0", "qos_swe", "qos_rtr")
    admin = "".join(
        f"{k}_vlarb_high {stale}\n{k}_vlarb_low {stale}\n{k}_high_limit 3\n{k}_sl2vl {','.join(['0'] * 16)}\n"
        for k in kinds
    )
    conf = etc / "opensm.conf"
    planned_engine = osmconf.options(plan_files["opensm.conf"])["routing_engine"]
    conf.write_text(
        f"event_plugin_name ibqos\nevent_plugin_options {etc / 'ibqos-tables.conf'}\n"
        f"qos_policy_file {etc / 'qos-policy.conf'}\nrouting_engine {planned_engine}\n{admin}"
    )
    a = Apply(ApplyRequest(path_b, conf, dry_run=True), echo=lambda line: None)
    a.pipeline.run(a, ("render",))
    applied = tmp_path / "applied.conf"
    applied.write_bytes(osmconf.to_bytes(a.s.files["opensm.conf"]))
    theirs, planned = opensm_reads(applied, tmp_path), osmconf.options(plan_files["opensm.conf"])
    terminal = {f: planned[f"qos_{f}"] for f in ("vlarb_high", "vlarb_low", "high_limit", "sl2vl")}
    for k in kinds:
        for f, want in terminal.items():
            got = theirs[f"{k}_{f}"]
            assert got == planned.get(f"{k}_{f}", want), (k, f, got)
            assert stale not in got


def test_relative_paths_in_opensm_conf_are_the_running_opensms(ibqos_cli, live_sm, tmp_path):
    """OpenSM opens a relative qos_policy_file or event_plugin_options from its own working
    directory (Debian's unit: /), not from where the admin runs ibqos. Before, apply wrote
    the plan's files relative to its own working directory, where OpenSM never reads them.
    Now they are taken from the OpenSM's working directory (/proc/PID/cwd), as its -F and -f
    are; with no OpenSM process to ask (a dry run without --pid), one line, exit 2."""
    h, sm, _plan_a, _ = live_sm
    plan_b, path_b = make_plan_file(tmp_path, "b", 60)
    text = sm.conf.read_text()
    rel = {}
    for key in ("qos_policy_file", "event_plugin_options"):
        absolute = osmconf.options(sm.conf)[key]
        rel[key] = Path(os.path.relpath(absolute, tmp_path / "osm"))
        text = text.replace(f"{key} {absolute}", f"{key} {rel[key]}")
    sm.conf.write_text(text)
    elsewhere = tmp_path / "admin" / "home"
    elsewhere.mkdir(parents=True)
    with opensm_restarted(h, sm, tmp_path / "osm") as osm:
        # without the process, its working directory is unknown: the dry run says so
        cp = ibqos_cli("apply", path_b, "--opensm-conf", sm.conf, "--dry-run", cwd=elsewhere, env=dict(os.environ))
        line = next(n for n, ln in enumerate(text.splitlines(), 1) if ln.startswith("qos_policy_file "))
        assert cp.returncode == 2, cp.stdout + cp.stderr
        assert cp.stderr.startswith(
            f"ibqos: error: {sm.conf}:{line}: qos_policy_file: {rel['qos_policy_file']} is relative: OpenSM opens it"
        ), cp.stderr
        args = ("apply", path_b, "--opensm-conf", sm.conf, "--pid", osm.pid, "--sim-socket", h.sock)
        cp = ibqos_cli(*args, "--dry-run", cwd=elsewhere, env=dict(os.environ))  # with it, the preview is right
        assert cp.returncode == 0, cp.stdout + cp.stderr
        assert f"changed: {tmp_path / 'osm' / rel['qos_policy_file']}\n" in cp.stdout, cp.stdout
        cp = ibqos_cli(*args, cwd=elsewhere, env=dict(os.environ))
        assert cp.returncode == 0, cp.stdout + cp.stderr
        want = render_plan(plan_b, tmp_path / "cfg-b")["qos-policy.conf"].read_text()
        assert (tmp_path / "osm" / rel["qos_policy_file"]).read_text() == want  # what OpenSM reads
        assert list(elsewhere.rglob("*")) == [] and not (tmp_path / "admin" / "cfg-a").exists()


def test_a_qos_policy_path_the_running_opensm_does_not_read_is_refused(ibqos_cli, live_sm, tmp_path):
    """redsm: OpenSM reads qos_policy_file's path only at start (its option table: not
    updatable). Before, `apply --qos-policy OTHER` wrote the plan's policy to OTHER and
    `qos_policy_file OTHER` into opensm.conf, swept, read back SL2VL and VLArb (which the
    policy file does not set) and said 'the fabric equals the plan', exit 0, while OpenSM kept
    reading the old path: with that file moved away, its next sweep logged 'ERR AC01: Failed
    opening QoS policy file <old path>'. Now one line naming --qos-policy, exit 2, before
    anything is written (dry run alike); the path OpenSM reads is still accepted."""
    h, sm, _plan_a, _ = live_sm
    _, path_b = make_plan_file(tmp_path, "b", 60)
    reads = Path(osmconf.options(sm.conf)["qos_policy_file"])
    other = tmp_path / "other" / "qos-policy.conf"
    other.parent.mkdir()
    skip = ("osm.log", "dumps", "dumps/ibqos-dla.json", ".")
    before = snapshot(sm.conf.parent, skip=skip), snapshot(reads.parent), snapshot(other.parent)
    for extra in ((), ("--dry-run",)):
        cp = run_apply(ibqos_cli, h, sm, path_b, "--qos-policy", other, *extra)
        assert cp.returncode == 2, cp.stdout + cp.stderr
        assert cp.stderr.splitlines() == [
            f"ibqos: error: --qos-policy: OpenSM reads its QoS policy from {reads}, and that path only at "
            f"start: a policy written to {other} would not be in force; leave --qos-policy out (the policy "
            f"goes to {reads}), or set 'qos_policy_file {other}' in {sm.conf} and restart OpenSM once, then apply"
        ], cp.stderr
        assert changes(before[0], snapshot(sm.conf.parent, skip=skip)) == []
        assert changes(before[1], snapshot(reads.parent)) == [] and changes(before[2], snapshot(other.parent)) == []
    cp = run_apply(ibqos_cli, h, sm, path_b, "--qos-policy", reads)
    assert cp.returncode == 0, cp.stdout + cp.stderr


def test_the_sms_own_partitions_putting_ipoib_in_another_class_are_refused_before_anything_is_written(
    ibqos_cli, tmp_path
):
    """smhost: a plan without `partitions:` leaves the SM's own partitions file in force, and
    OpenSM creates each `ipoib` partition's broadcast group on its `sl=`. An admin's
    `storage ... ipoib, sl=1` put storage's IPoIB broadcast and multicast on SL 1, the plan's
    high-priority class (the SA's own MCMemberRecord says so), while the default class takes
    IPoIB's unicast there; apply said 'the fabric equals the plan' and status OK (exit 0). The
    same file given as the policy's `partitions:` is refused by `ibqos plan`; now apply runs
    that check on the file the running OpenSM reads: one line naming its line, exit 2, nothing
    written, no sweep. With sl=0 the plan applies."""
    part = tmp_path / "partitions.conf"
    part.write_text(
        "Default=0x7fff, ipoib : ALL=full ;\nstorage=0x0002, ipoib, sl=1 : ALL=full ;\nhpc=0x0003, sl=7 : ALL=full ;\n"
    )
    with sm_on_plan_a(tmp_path, conf={"partition_config_file": str(part)}) as (h, sm, plan_a, _):
        qos_sl = next(c.sls[0] for c in plan_a.classes if not c.default)
        assert saquery_ipoib_broadcast_sls(h.env, tmp_path)[0x0002] == qos_sl == 1  # the oracle: OpenSM's SA
        _, path_b = make_plan_file(tmp_path, "b", 25)
        state = sm.conf.parent / "ibqos.d"
        before, texts, sweeps = state_tree(state), managed_texts(sm), sm.record().heavy_sweeps
        cp = run_apply(ibqos_cli, h, sm, path_b)
        assert cp.returncode == 2, cp.stdout + cp.stderr
        assert cp.stderr.strip().splitlines() == [
            f"ibqos: error: {part}:2: partitions: partition 'storage' (0x0002) has OpenSM create IPoIB's "
            "broadcast group on SL 1, but class 'best-effort' takes IPoIB on SL 0 as the default class (no rule "
            "matches the partition): IPoIB's broadcast and multicast would run in another class; add sl=0 to the "
            "partition's flags"
        ], cp.stderr
        assert state_tree(state) == before and managed_texts(sm) == texts
        assert sm.record().heavy_sweeps == sweeps

        part.write_text(part.read_text().replace("sl=1", "sl=0"))
        cp = run_apply(ibqos_cli, h, sm, path_b)
        assert cp.returncode == 0, cp.stdout + cp.stderr


def test_status_reports_the_sms_own_partitions_edited_after_the_apply_to_put_ipoib_in_another_class(
    ibqos_cli, tmp_path
):
    """The check above ran at apply only. The SM's own partitions file stays the admin's: an
    edit after the apply (sl=0 back to sl=1), then an OpenSM restart, put storage's IPoIB
    broadcast group on SL 1, the plan's other class (the SA says so), and `status --live` said
    OK, exit 0. Now finding `partitions`, the apply's line, exit 1."""
    part = tmp_path / "partitions.conf"
    part.write_text("Default=0x7fff, ipoib : ALL=full ;\nstorage=0x0002, ipoib, sl=0 : ALL=full ;\n")
    with sm_on_plan_a(tmp_path, conf={"partition_config_file": str(part)}) as (h, sm, _, _):
        _, path_b = make_plan_file(tmp_path, "b", 25)
        assert run_apply(ibqos_cli, h, sm, path_b).returncode == 0
        status = ("status", "--live", "--opensm-conf", sm.conf, "--sim-socket", h.sock, "--json")
        cp = ibqos_cli(*status)
        assert cp.returncode == 0, cp.stdout + cp.stderr
        part.write_text(part.read_text().replace("sl=0", "sl=1"))
        # OpenSM keeps a broadcast group it made; it makes them from the file at its start
        with opensm_restarted(h, sm, tmp_path / "restarted") as osm:
            # its first sweep ended: the SA answers, and the broadcast groups are made
            wait_until(lambda: (rec := own_record(sm.dumps, osm.pid)) is not None and rec.subnet_up > 0, timeout=120)
            assert saquery_ipoib_broadcast_sls(h.env, tmp_path)[0x0002] == 1  # the oracle: OpenSM's SA
            cp = ibqos_cli(*status)
            assert cp.returncode == 1, cp.stdout + cp.stderr
            found = [f["message"] for f in json.loads(cp.stdout)["findings"]]
            assert found == [
                f"{part}:2: partitions: partition 'storage' (0x0002) has OpenSM create IPoIB's broadcast group "
                "on SL 1, but class 'best-effort' takes IPoIB on SL 0 as the default class (no rule matches the "
                "partition): IPoIB's broadcast and multicast would run in another class; add sl=0 to the "
                "partition's flags (the SM's own partitions file, which the plan leaves in force)"
            ], cp.stdout
