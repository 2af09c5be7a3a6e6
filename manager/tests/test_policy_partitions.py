"""`partitions:` and port names: bad input is one `file:line: field: message` line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from ibqos.paths import REPO_ROOT


def _plan(ibqos_cli, tmp: Path, match: dict, partitions: str | None):
    doc = yaml.safe_load((REPO_ROOT / "examples" / "two-class.yaml").read_text())
    doc["classes"][0]["match"] = match
    if partitions is not None:
        (tmp / "p.conf").write_text(partitions)
        doc["partitions"] = "p.conf"
    (tmp / "pol.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return ibqos_cli("plan", tmp / "pol.yaml", "-o", tmp / "plan.json", timeout=120)


def test_a_pkey_without_its_partition_is_refused(ibqos_cli, tmp_path):
    r = _plan(ibqos_cli, tmp_path, {"pkey": ["0x0a01-0x0a02"]}, "Default=0x7fff : ALL=full ;\nt=0x0a01 : ALL ;\n")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "pol.yaml:" in r.stderr and "0x0a02 has no partition" in r.stderr
    assert not (tmp_path / "plan.json").exists()


def test_partition_syntax_errors_name_the_line(ibqos_cli, tmp_path):
    r = _plan(ibqos_cli, tmp_path, {}, "Default=0x7fff : ALL=full ;\n# c\nt=0xzz : ALL ;\n")
    assert r.returncode == 2 and "p.conf:3:" in r.stderr and "not a number" in r.stderr, r.stderr
    r = _plan(ibqos_cli, tmp_path, {}, "Default=0x7fff : ALL=full\n")
    assert r.returncode == 2 and "p.conf:1:" in r.stderr and "end with ';'" in r.stderr, r.stderr


def test_the_plan_carries_the_partitions_and_port_0_is_refused(ibqos_cli, tmp_path):
    text = "Default=0x7fff, ipoib : ALL=full ;\nt=0x0a01 :\n  ALL=full ;\n"
    r = _plan(ibqos_cli, tmp_path, {"pkey": ["0x0a01"]}, text)
    assert r.returncode == 0, r.stderr
    r = ibqos_cli("render", tmp_path / "plan.json", "-o", tmp_path / "r", timeout=120)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "r" / "partitions.conf").read_text() == text
    assert f"partition_config_file {tmp_path / 'r' / 'partitions.conf'}" in (tmp_path / "r" / "opensm.conf").read_text()
    r = _plan(ibqos_cli, tmp_path, {"groups": [{"name": "g", "port_name": ["sw1/P0"]}]}, None)
    assert r.returncode == 2 and "port from 1" in r.stderr and len(r.stderr.splitlines()) == 1


def test_pkeys_in_names_them_as_written_even_in_syntax_ibqos_does_not_check():
    """apply's P_Key guard reads the partitions file OpenSM reads now, which may be the admin's."""
    from ibqos.policy.partitions import pkeys_in

    ours = "Default=0x7fff : ALL=full ;\nt1=0x8101 : ALL=full ;  # a tenant\nt2=258, ipoib : ALL ;\n"
    assert pkeys_in(ours) == {0x7FFF: "0x7fff", 0x0101: "0x8101", 0x0102: "258"}
    theirs = "# hand-written\nstorage=0x8105, weird_flag : 0x1234=full ;\nalso=0x0106 : SELF=strange ;\n"
    assert pkeys_in(theirs) == {0x0105: "0x8105", 0x0106: "0x0106"}
    assert pkeys_in("") == {}
    # hostile36: a P_Key with a leading 0 in such a file was a ValueError (apply: internal
    # error, exit 70); OpenSM reads it with strtoul(.., 0), octal
    octal = "storage=010, weird_flag : ALL=full ;\nx=0X0107 : ALL ;\n"
    assert pkeys_in(octal) == {0x0008: "010", 0x0107: "0X0107"}


def test_an_ipoib_class_needs_its_partitions_broadcast_group_on_its_sl(ibqos_cli, tmp_path):
    """OpenSM creates IPoIB's broadcast group on the partition's sl= (0 without one), not on
    the QoS level's SL: IPoIB's broadcast and multicast would run in the default class (seen
    with `saquery -g` on ibsim; test_classify_fabric checks the SA's answer)."""
    two = "# IPoIB\nDefault=0x7fff, ipoib : ALL=full ;\nt=0x0a02, ipoib, mtu=5 :\n  ALL ;\n"
    r = _plan(ibqos_cli, tmp_path, {"ulps": [{"ulp": "ipoib", "pkey": "0x0a02"}]}, two)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert (
        "p.conf:3: partitions: partition 't' (0x0a02) has OpenSM create IPoIB's broadcast group on SL 0 (no sl= flag)"
        in r.stderr
    )
    assert "class 'qos' takes IPoIB on SL 1" in r.stderr and "add sl=1 to the partition's flags" in r.stderr
    assert not (tmp_path / "plan.json").exists()
    r = _plan(ibqos_cli, tmp_path, {"ulps": ["ipoib"]}, two.replace("ipoib :", "ipoib, sl=2 :"))
    assert r.returncode == 2 and "p.conf:2:" in r.stderr and "on SL 2, but class 'qos'" in r.stderr, r.stderr
    r = _plan(ibqos_cli, tmp_path, {"ulps": ["ipoib"]}, two.replace("ipoib :", "ipoib, sl=1 :"))
    assert r.returncode == 0, r.stderr
    # without a partitions file the SM's own decides: the plan says so
    r = _plan(ibqos_cli, tmp_path, {"ulps": ["ipoib"]}, None)
    assert r.returncode == 0, r.stderr
    assert "note: class 'qos' takes IPoIB on SL 1, but IPoIB's broadcast group is on its partition's sl=" in (
        r.stdout + r.stderr
    )


def test_a_pkey_match_on_an_ipoib_partition_needs_its_sl_too(ibqos_cli, tmp_path):
    """redteam: OpenSM's `ipoib` ULP is itself a P_Key match, and IPoIB asks the SA with the
    partition's P_Key and no service ID, so a class's `pkey:` rule takes IPoIB's unicast there
    as `ulps: [ipoib]` does, and the broadcast group on the partition's sl= splits it alike. A
    site's set-up: Lustre on two o2ib nets (one an IPoIB child partition, named by a range),
    GPFS verbs on its own partition, storage matched by the P_Key of an IPoIB partition."""
    parts = (
        "Default=0x7fff, ipoib, sl=0 : ALL=full ;\nlnet0=0x8001 : ALL=full ;\nlnet1=0x8002, ipoib, sl=1 : ALL=full ;\n"
        "gpfs=0x0a01 : ALL=full ;\n# the storage partition carries IPoIB too\nstorage=0x0b01, ipoib : ALL=full ;\n"
    )
    lustre = {"ulps": [{"ulp": "any", "service_id": "0x10603db"}, {"ulp": "ipoib", "pkey": "0x8001-0x8002"}]}
    r = _plan(ibqos_cli, tmp_path, lustre, parts.replace("storage=0x0b01, ipoib", "storage=0x0b01"))
    assert r.returncode == 0, r.stderr  # a range on an ipoib rule (was a ValueError traceback)
    r = _plan(ibqos_cli, tmp_path, {"pkey": ["0x0a01"]}, parts.replace("storage=0x0b01, ipoib", "storage=0x0b01"))
    assert r.returncode == 2 and "p.conf:3: partitions: partition 'lnet1' (0x0002)" in r.stderr, r.stderr
    assert "but class 'best-effort' takes IPoIB on SL 0 as the default class (no rule matches" in r.stderr
    parts = parts.replace("lnet1=0x8002, ipoib, sl=1", "lnet1=0x8002")  # Lustre's second net on verbs alone
    (tmp_path / "plan.json").unlink()
    r = _plan(ibqos_cli, tmp_path, {"pkey": ["0x0b01"]}, parts)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith("ibqos: error: ") and "p.conf:6: partitions: partition 'storage' (0x0b01)" in r.stderr
    assert "class 'qos' takes IPoIB on SL 1" in r.stderr and "add sl=1 to the partition's flags" in r.stderr
    assert not (tmp_path / "plan.json").exists()
    r = _plan(ibqos_cli, tmp_path, {"pkey": ["0x0a01", "0x8b01"], "groups": [{"name": "oss", "port_guid": [7]}]}, parts)
    assert r.returncode == 2 and "class 'qos' takes IPoIB on SL 1 for its port groups" in r.stderr, r.stderr
    r = _plan(
        ibqos_cli, tmp_path, {"pkey": ["0x0b01"]}, parts.replace("storage=0x0b01, ipoib", "storage=0x0b01, ipoib, sl=1")
    )
    assert r.returncode == 0, r.stderr
    # a service ID narrows the rule to paths IPoIB never asks for: the partition's sl= is free
    r = _plan(ibqos_cli, tmp_path, {"pkey": ["0x0b01"], "service_id": ["0x1000"]}, parts)
    assert r.returncode == 0, r.stderr
    # no rule takes IPoIB on the partition: the default class does, on its SL, not on sl=1's class
    r = _plan(
        ibqos_cli,
        tmp_path,
        {"service_id": ["0x1000"]},
        parts.replace("storage=0x0b01, ipoib", "storage=0x0b01, ipoib, sl=1"),
    )
    assert r.returncode == 2 and "as the default class (no rule matches the partition)" in r.stderr, r.stderr


def test_a_partitions_file_that_cannot_be_read_names_the_policys_line(tmp_path):
    """redfiles: `partitions: nosuch.conf` said only '.../nosuch.conf: no such file', and
    `partitions: ""` '...: is a directory, not a partitions.conf' (the policy's own directory):
    neither named the policy or its line. The file's own syntax errors still name its line."""
    from ibqos.errors import InputError
    from ibqos.policy import load_policy

    text = (REPO_ROOT / "examples" / "two-class.yaml").read_text()
    line = text.count("\n") + 1
    (tmp_path / "adir").mkdir()
    for value, says in (
        ("nosuch.conf", f"{tmp_path}/nosuch.conf: no such file"),
        ("adir", f"{tmp_path}/adir: is a directory, not a partitions.conf"),
        ('""', "an empty path names no partitions file"),
        ("/dev/zero", "/dev/zero: not a regular file"),
    ):
        f = tmp_path / "pol.yaml"
        f.write_text(text + f"partitions: {value}\n")
        try:
            load_policy(f)
        except InputError as e:
            assert str(e) == f"{f}:{line}: partitions: {says}", str(e)
        else:
            raise AssertionError(value)


@pytest.mark.fabric
def test_partition_flags_are_read_as_opensm_reads_them_case_and_number(ibqos_cli, tmp_path):
    """hostile37: flags were matched case-insensitively, where OpenSM compares their names with
    strncmp and ignores one it does not know (a PARSE WARN at verbose level): `SL=1` passed the
    IPoIB check as SL 1 (plan exit 0) while OpenSM created the broadcast group on SL 0, in the
    default class. And `sl=01` was refused though OpenSM reads it with strtoul(.., 0) as 1. The
    oracle is OpenSM's SA (`saquery -g`): the groups' SLs for the flags as written."""
    from ibqos_sim.harness import Harness
    from ibqos_sim.harness.diags import saquery_ipoib_broadcast_sls
    from ibqos_sim.harness.topology import fat_tree

    head = "Default=0x7fff, ipoib, sl=0 : ALL=full ;\n"
    upper, octal, oddcase = (
        "t=0x0a02, ipoib, SL=1 : ALL=full ;\n",
        "t=0x0a03, ipoib, sl=01 : ALL=full ;\n",
        "t=0x0a04, IPoIB, sl=1 : ALL=full ;\n",
    )
    part = tmp_path / "oracle.conf"
    part.write_text(head + upper + octal + oddcase)
    net = fat_tree(leaves=1, spines=0, hosts=2).write_net(tmp_path / "f.net")
    with Harness(net, run_dir=tmp_path / "h") as h:
        h.start_sm(engine="minhop", conf={"qos": "TRUE", "partition_config_file": str(part)})
        sls = saquery_ipoib_broadcast_sls(h.env, tmp_path)
    assert sls[0x0A02] == 0 and sls[0x0A03] == 1 and 0x0A04 not in sls, sls

    def ipoib_on(pkey: str) -> dict:
        return {"ulps": [{"ulp": "ipoib", "pkey": pkey}]}  # class 'qos', on SL 1

    r = _plan(ibqos_cli, tmp_path, ipoib_on("0x0a02"), head + upper)
    assert r.returncode == 2 and r.stderr.splitlines() == [
        f"ibqos: error: {tmp_path / 'p.conf'}:2: partitions: unknown partition flag 'SL=1': OpenSM reads "
        "flag names case-sensitively and would ignore this one; write 'sl=1'"
    ], r.stderr
    r = _plan(ibqos_cli, tmp_path, ipoib_on("0x0a04"), head + oddcase)
    assert r.returncode == 2 and "p.conf:2: partitions: unknown partition flag 'IPoIB'" in r.stderr, r.stderr
    assert "write 'ipoib'" in r.stderr and not (tmp_path / "plan.json").exists()
    r = _plan(ibqos_cli, tmp_path, ipoib_on("0x0a02-0x0a03"), head + octal + "u=0x0a02, ipoib, sl=0x1 : ALL ;\n")
    assert r.returncode == 0, r.stderr


@pytest.mark.fabric
@pytest.mark.parametrize(
    "text, line, osm_line, says",
    [
        (
            "Default=0x7fff, ipoib, sl=0 : ALL=full ;\nt=0x0a02, ipoib,\n  sl=1 : ALL=full ;\nu=0x0a03 : ALL ;\n",
            2,
            2,
            "'t=0x0a02, ipoib,': OpenSM 3.3.23 reads a partition's definition, up to its ':', on the statement's "
            "first line",
        ),
        (
            "Default=0x7fff, ipoib, sl=0 : ALL=full ;\r\nt=0x0a02, ipoib, sl=1 : ALL=full ;\r\nu=0x0a03 : ALL ;\r\n",
            1,
            1,
            "a carriage return (a CRLF line end?): OpenSM 3.3.23 reads it as a character of the statement",
        ),
        (  # the layout of OpenSM's own example partitions.conf
            "Default=0x7fff, ipoib, sl=0 : ALL=full ;\nt=0x0a02, ipoib, sl=1 :\n"
            "        mgid=ff12:401b::1   # IPv4 All Hosts group\n        ;\nu=0x0a03 : ALL ;\n",
            3,
            4,
            "an mgid= member whose statement does not end on its line: OpenSM 3.3.23 reads what follows",
        ),
        (
            "Default=0x7fff, ipoib : ALL=full ;\nt=0x0a02, ipoib : ALL=full, mgid=ff12:401b::1 ;\n"
            "u=0x0a03, ipoib : ALL=full ;\n",
            2,
            2,
            "an mgid= member without a flag after it",
        ),
        (
            "Default=0x7fff, ipoib, sl=0 : ALL=full ;\nt=0x0a02, ipoib, sl=1 : ALL=full, mgid=ff12:401b::1;# hosts\n"
            "u=0x0a03 : ALL ;\n",
            2,
            2,
            "an mgid= member without a flag after it",
        ),
    ],
    ids=[
        "definition-over-two-lines",
        "crlf",
        "mgid-then-a-later-line",
        "mgid-last-then-blank",
        "mgid-last-then-comment",
    ],
)
def test_a_partitions_file_opensm_stops_reading_is_refused_at_its_line(ibqos_cli, tmp_path, text, line, osm_line, says):
    """hostile37: ibqos joined a definition written over two lines and took CRLF line ends as
    line ends; OpenSM 3.3.23 reads a line with fgets and wants the definition up to its ':' on
    the statement's first line, and skips only ' ', '\\t' and '\\n' (a '\\r' after ';' starts
    a statement of its own): 'PARSE ERROR: line N: no partition definition found', and every
    partition from there on is dropped. `ibqos plan` took both files, held partition 't' to
    the IPoIB check on an SL OpenSM never gave it, and the plan's partitions were missing at
    the sweep. An mgid= member takes the rest of its line as the group's flags: a ';' on a
    later line (OpenSM's own example file) is the same PARSE ERROR, and OpenSM then falls back
    to its default partition alone. The oracle is OpenSM: its log and its SA's groups."""
    from ibqos_sim.harness import Harness
    from ibqos_sim.harness.diags import saquery_ipoib_broadcast_sls
    from ibqos_sim.harness.topology import fat_tree

    part = tmp_path / "oracle.conf"
    part.write_bytes(text.encode())
    net = fat_tree(leaves=1, spines=0, hosts=2).write_net(tmp_path / "f.net")
    with Harness(net, run_dir=tmp_path / "h") as h:
        sm = h.start_sm(engine="minhop", conf={"qos": "TRUE", "partition_config_file": str(part)})
        sls = saquery_ipoib_broadcast_sls(h.env, tmp_path)
        logged = [ln for ln in sm.log.read_text(errors="replace").splitlines() if "PARSE ERROR" in ln]
    assert 0x0A02 not in sls and any(f"PARSE ERROR: line {osm_line}: no partition definition" in ln for ln in logged)

    r = _plan(ibqos_cli, tmp_path, {"ulps": [{"ulp": "ipoib", "pkey": "0x0a02"}]}, text)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith(f"ibqos: error: {tmp_path / 'p.conf'}:{line}: partitions: {says}"), r.stderr
    assert not (tmp_path / "plan.json").exists()


@pytest.mark.fabric
def test_a_partition_stated_twice_keeps_the_broadcast_group_of_its_first_ipoib_statement(ibqos_cli, tmp_path):
    """hostile37: a P_Key stated twice with `ipoib` (a site's file grown by hand) was held to
    the last statement's sl=, where OpenSM creates the broadcast group at the first and keeps
    it: 'sl=1' then 'sl=2' put the group on SL 1 (saquery -g), yet the class taking IPoIB there
    on SL 1 was refused, and with 'sl=0' second the default class (SL 0) passed (plan exit 0)
    with IPoIB's broadcast and multicast on SL 1, in another class."""
    from ibqos_sim.harness import Harness
    from ibqos_sim.harness.diags import saquery_ipoib_broadcast_sls
    from ibqos_sim.harness.topology import fat_tree

    text = (
        "Default=0x7fff, ipoib, sl=0 : ALL=full ;\nt=0x0a02, ipoib, sl=1 : ALL=full ;\nt=0x0a02, ipoib, sl=2 : ALL ;\n"
    )
    part = tmp_path / "oracle.conf"
    part.write_text(text)
    net = fat_tree(leaves=1, spines=0, hosts=2).write_net(tmp_path / "f.net")
    with Harness(net, run_dir=tmp_path / "h") as h:
        h.start_sm(engine="minhop", conf={"qos": "TRUE", "partition_config_file": str(part)})
        assert saquery_ipoib_broadcast_sls(h.env, tmp_path)[0x0A02] == 1

    # four-class-like: 'qos' (SL 1) takes IPoIB on 0x0a02 with the broadcast group on SL 1: fine
    r = _plan(ibqos_cli, tmp_path, {"ulps": [{"ulp": "ipoib", "pkey": "0x0a02"}]}, text)
    assert r.returncode == 0, r.stderr
    # the group stays on SL 1, not on the second statement's SL 0: the default class is not it
    r = _plan(ibqos_cli, tmp_path, {"service_id": ["0x1000"]}, text.replace("sl=2", "sl=0"))
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert (
        f"{tmp_path / 'p.conf'}:2: partitions: partition 't' (0x0a02) has OpenSM create IPoIB's broadcast group on SL 1"
        in (r.stderr)
    )


def _what_opensm_reads(tmp_path: Path, text: str) -> tuple[str, list[str], list[str]]:
    """OpenSM 3.3.23 on ibsim (one switch, two CAs) with `text` as its partitions file: its log,
    the P_Keys it programs on its own port (smpquery pkeys) and its SA's multicast groups (its
    opensm-sa.dump: `saquery -g` on ibsim returns only the first 3 groups)."""
    from ibqos_sim.harness import Harness
    from ibqos_sim.harness.topology import fat_tree

    part = tmp_path / "oracle.conf"
    part.write_text(text)
    net = fat_tree(leaves=1, spines=0, hosts=2).write_net(tmp_path / "f.net")
    with Harness(net, run_dir=tmp_path / "h") as h:
        sm = h.start_sm(engine="minhop", conf={"qos": "TRUE", "partition_config_file": str(part)})
        pkeys = re.findall(r"0x[0-9a-f]{4}", h.diag(["smpquery", "pkeys", "-D", "0"]).stdout)
        sm.wait_settled()  # the SA dump is written after the first SUBNET UP (read before it: flaky)
        groups = [ln for ln in (sm.dumps / "opensm-sa.dump").read_text().splitlines() if ln.startswith("MC Group")]
        return sm.log.read_text(errors="replace"), pkeys, groups


@pytest.mark.fabric
def test_mgid_members_opensm_reads_are_taken(ibqos_cli, tmp_path):
    """The other side of the mgid= rule above, with OpenSM as the oracle: an mgid= entry with a
    flag after it, its statement ended on its line (a blank or a comment after the ';' too), is
    read: every group is in OpenSM's SA (its opensm-sa.dump: `saquery -g` on ibsim returns
    only the first 3 groups), no PARSE ERROR, and ibqos plan takes the file."""
    text = (
        "Default=0x7fff, ipoib, sl=0 : ALL=full ;\nt=0x0a02, ipoib, sl=1 : ALL=full, mgid=ff12:401b::1, sl=1;  # c\n"
        "u=0x0a03, ipoib, sl=1 : ALL=full ;\nv=0x0a04, ipoib, sl=1 : ALL=full, mgid=ff12:401b::2, sl=1 ;\n"
        "w=0x0a05, ipoib, sl=1 : ALL=full ;\n"
    )
    log, _, groups = _what_opensm_reads(tmp_path, text)
    assert "PARSE ERROR" not in log
    made = {m[1] for ln in groups if (m := re.search(r"mgid=0xff12401b([0-9a-f]{4})0000:0x([0-9a-f]{16})", ln))}
    assert {"8a02", "8a03", "8a04", "8a05", "ffff"} <= made, groups
    assert sum("0x0000000000000001" in ln or "0x0000000000000002" in ln for ln in groups) == 2, groups
    r = _plan(ibqos_cli, tmp_path, {"ulps": [{"ulp": "ipoib", "pkey": "0x0a02-0x0a05"}]}, text)
    assert r.returncode == 0, r.stderr


@pytest.mark.fabric
def test_a_pkey_written_in_octal_is_read_as_opensm_reads_it(ibqos_cli, tmp_path):
    """A P_Key written `010` was refused ('not a number': Python's int(.., 0) takes no leading
    0) where OpenSM 3.3.23 reads it with strtoul(.., 0) as 8. The oracle is OpenSM's SA: the
    broadcast group of that partition is on P_Key 0x0008 (SL 1); then the plan takes it."""
    from ibqos_sim.harness import Harness
    from ibqos_sim.harness.diags import saquery_ipoib_broadcast_sls
    from ibqos_sim.harness.topology import fat_tree

    text = "Default=0x7fff, ipoib, sl=0 : ALL=full ;\nt=010, ipoib, sl=1 : ALL=full ;\n"
    part = tmp_path / "oracle.conf"
    part.write_text(text)
    net = fat_tree(leaves=1, spines=0, hosts=2).write_net(tmp_path / "f.net")
    with Harness(net, run_dir=tmp_path / "h") as h:
        h.start_sm(engine="minhop", conf={"qos": "TRUE", "partition_config_file": str(part)})
        sls = saquery_ipoib_broadcast_sls(h.env, tmp_path)
    assert sls.get(0x0008) == 1, sls

    r = _plan(ibqos_cli, tmp_path, {"ulps": [{"ulp": "ipoib", "pkey": "0x0008"}]}, text)
    assert r.returncode == 0, r.stderr
    r = _plan(ibqos_cli, tmp_path, {"ulps": [{"ulp": "ipoib", "pkey": "0x0008"}]}, text.replace("010", "08"))
    assert r.returncode == 2 and "P_Key '08' is not a number" in r.stderr, r.stderr


@pytest.mark.fabric
@pytest.mark.parametrize(
    "entries, osm_says, says",
    [
        (
            "mgid=ff12:401b::1, sl=1, ALL=full",
            "PARSE WARN: line 2: unrecognized mgroup flag 'ALL' - ignored",
            "member 'ALL=full' after an mgid= entry: OpenSM 3.3.23 reads what follows mgid= as the group's flags "
            "and ignores this one, so the port is no member of the partition; list the members before the mgid= entry",
        ),
        (
            "ALL=full, sl=1",
            "PARSE ERROR: line 2: bad PortGUID",
            "member 'sl=1': want a port GUID, ALL, ALL_CAS, ALL_SWITCHES, ALL_ROUTERS or SELF, optionally "
            "=full|limited|both (OpenSM 3.3.23 reads any other entry as a bad PortGUID, a PARSE ERROR",
        ),
        (
            "ALL=full, MGID=ff12:401b::1, sl=1",
            "PARSE ERROR: line 2: bad PortGUID",
            "member 'MGID=ff12:401b::1': want a port GUID",
        ),
        (
            "ALL=full, mgid=ff12:401b::2, sl=1, mgid=ff12:401b::3, sl=1",
            "PARSE WARN: line 2: unrecognized mgroup flag 'mgid' - ignored",
            "a second mgid= entry 'mgid=ff12:401b::3' in one statement: OpenSM 3.3.23 reads it as a flag of the "
            "first group and creates no group for it",
        ),
    ],
    ids=["member-after-mgid", "flag-among-members", "mgid-in-capitals", "second-mgid"],
)
def test_members_and_flags_opensm_reads_otherwise_are_refused(ibqos_cli, tmp_path, entries, osm_says, says):
    """plan39: ibqos took any member, or any flag, anywhere in a statement's member list, and
    'MGID=' in any case. OpenSM 3.3.23 reads every entry after an mgid= as a flag of that group
    (a member there is ignored: no port gets the partition's P_Key; a second mgid= too: no
    group), and every entry before it as a port ('sl=1', 'MGID=...' are a bad PortGUID, a
    PARSE ERROR that drops this partition and every later one). The oracle is OpenSM: its log,
    the P_Key table it programs on its own port (smpquery) and its SA's groups. A member the
    admin wrote is not one OpenSM takes, so the file is refused at the line, not read silently."""
    text = (
        "Default=0x7fff, ipoib, sl=0 : ALL=full ;\n"
        f"t=0x0a02, ipoib, sl=1 : {entries} ;\n"
        "u=0x0a03, ipoib, sl=1 : ALL=full, mgid=ff12:401b::4, sl=1 ;\n"
    )
    log, pkeys, groups = _what_opensm_reads(tmp_path, text)
    logged = [ln for ln in log.splitlines() if "PARSE" in ln]
    assert any(osm_says in ln for ln in logged), logged
    if "mgid" in osm_says:  # the partition is read, the second group never made
        assert "0x8a02" in pkeys and not any("0xff12401b8a020000:0x0000000000000003" in g for g in groups), groups
    else:  # the partition has no member: no port holds its P_Key
        assert "0x8a02" not in pkeys and "0x0a02" not in pkeys, pkeys
    if "ERROR" in osm_says:  # and OpenSM stopped reading: the next partition is gone too
        assert "0x8a03" not in pkeys, pkeys
    else:
        assert "0x8a03" in pkeys, pkeys

    r = _plan(ibqos_cli, tmp_path, {"ulps": [{"ulp": "ipoib", "pkey": "0x0a02-0x0a03"}]}, text)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith(f"ibqos: error: {tmp_path / 'p.conf'}:2: partitions: {says}"), r.stderr
    assert not (tmp_path / "plan.json").exists()
