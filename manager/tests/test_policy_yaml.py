"""The policy loader at the YAML level (issue 13, "Policy YAML"): merge keys, recursive
anchors, deep nesting, huge scalars, alias bombs, oversized, non-UTF-8 and non-regular files
each give one `file:line: field: message` line and exit 2, quickly and in little memory."""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

import pytest
from ibqos.errors import InputError
from ibqos.policy import load_policy
from ibqos_app.cli import main

GOOD = """\
fabric:
  rate: HDR
  mtu: 2048
  vlarb_cap: {high: 8, low: 8}
classes:
  - name: qos
    priority: high
    bandwidth: 40
  - name: rest
    priority: low
    bandwidth: rest
    default: true
"""


def _bomb(depth: int = 9) -> str:
    rows = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    rows += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, depth + 1)]
    return GOOD + "\n".join(rows) + "\n"


# name: (file text, line, field, message fragment)
CASES = {
    # plan39: pydantic's lax mode took a whole number written as text or as a float
    "sl-as-text": (
        GOOD.replace("    bandwidth: 40\n", '    bandwidth: 40\n    sls: ["1"]\n'),
        9,
        "classes[0].sls[0]",
        '(got "1")',
    ),
    "sl-as-float": (
        GOOD.replace("    bandwidth: 40\n", "    bandwidth: 40\n    sls: [1.0]\n"),
        9,
        "classes[0].sls[0]",
        "(got 1.0)",
    ),
    "cap-as-text": (
        GOOD.replace("{high: 8, low: 8}", '{high: "8", low: 8}'),
        4,
        "fabric.vlarb_cap.high",
        'Input should be a valid integer (got "8")',
    ),
    "distance-as-float": (
        GOOD.replace("    bandwidth: 40\n", "    bandwidth: 40\n    max_distance: 2.0\n"),
        9,
        "classes[0].max_distance",
        "(got 2.0)",
    ),
    "bound-as-text": (
        GOOD.replace("    bandwidth: 40\n", '    bandwidth: 40\n    max_latency_us: "8"\n'),
        9,
        "classes[0].max_latency_us",
        'Input should be a valid number (got "8")',
    ),
    "merge-key": (
        GOOD.replace("  mtu: 2048\n", "  <<: {mtu: 2048}\n"),
        3,
        "fabric",
        "YAML merge keys (<<) are not supported",
    ),
    "merge-key-alias": (
        "base: &b {mtu: 2048}\n" + GOOD.replace("  mtu: 2048\n", "  <<: *b\n"),
        4,
        "fabric",
        "merge keys",
    ),
    "self-reference": (
        GOOD.replace("fabric:\n", "fabric: &f\n").replace("  mtu: 2048\n", "  mtu: *f\n"),
        3,
        "fabric.mtu",
        "recursive anchor",
    ),
    # root and fabric mappings, then sequences: the 31st sequence would be the 33rd level
    "nested-1000": (
        GOOD.replace("mtu: 2048", "mtu: " + "[" * 1000 + "]" * 1000),
        3,
        "fabric.mtu" + "[0]" * 30,
        "nested more than 32 levels deep",
    ),
    "int-5000-digits": (GOOD.replace("mtu: 2048", "mtu: " + "9" * 5000), 3, "fabric.mtu", "a value of 5000 characters"),
    "int-4000-digits": (
        GOOD.replace("mtu: 2048", "mtu: " + "9" * 4000),
        3,
        "fabric.mtu",
        "a number of 4000 characters (at most 40)",
    ),
    "float-overflow": (
        GOOD.replace("bandwidth: 40", "bandwidth: 1.0e+400"),
        8,
        "classes[0].bandwidth",
        "'1.0e+400' is not a finite number",
    ),
    "nan": (GOOD.replace("bandwidth: 40", "bandwidth: .nan"), 8, "classes[0].bandwidth", "not a finite number"),
    # redteam: YAML 1.1 reads `1e400` (no dot) as a string, which the rate parser made inf
    # (an internal error writing plan.json)
    "rate-1e400": (GOOD.replace("rate: HDR", "rate: 1e400"), 2, "fabric.rate", "finite number of Gb/s, got '1e400'"),
    # redfiles: a rate no port runs made a packet's time infinite (internal error, exit 70)
    "rate-subnormal": (
        GOOD.replace("rate: HDR", 'rate: "4.9e-324"'),
        2,
        "fabric.rate",
        "below the slowest InfiniBand port (SDR 1x, 2 Gb/s)",
    ),
    # redfiles: YAML's yes/on/true is a bool, which pydantic read as 1 where a number is wanted
    "bandwidth-yes": (GOOD.replace("bandwidth: 40", "bandwidth: yes"), 8, "classes[0].bandwidth", "got true"),
    "sl-on": (
        GOOD.replace("    default: true", "    default: true\n    sls: [on]"),
        13,
        "classes[1].sls[0]",
        "want a number, got true",
    ),
    "distance-true": (
        GOOD.replace("bandwidth: 40", "bandwidth: 40\n    max_distance: true"),
        9,
        "classes[0].max_distance",
        "want a number, got true",
    ),
    "cap-true": (GOOD.replace("high: 8", "high: true"), 4, "fabric.vlarb_cap.high", "want a number, got true"),
    # redfiles: a rate where a share is wanted said only 'unable to parse string as a number'
    "bandwidth-gbps": (
        GOOD.replace("bandwidth: 40", "bandwidth: 80 Gb/s"),
        8,
        "classes[0].bandwidth",
        "'80 Gb/s' is not a share: give a percentage of the link (40 or '40%') or rest",
    ),
    "rate-inf": (GOOD.replace("rate: HDR", "rate: inf Gb/s"), 2, "fabric.rate", "finite number of Gb/s"),
    "python-tag": (
        GOOD.replace("rate: HDR", "rate: !!python/object/apply:os.system [true]"),
        2,
        "fabric.rate",
        "YAML tag !!python/object/apply:os.system is not supported",
    ),
    "alias-key": (
        "k: &k mtu\n" + GOOD.replace("  mtu: 2048\n", "  *k : 2048\n"),
        4,
        "fabric",
        "mapping keys must be plain names",
    ),
    "undefined-alias": (
        GOOD.replace("mtu: 2048", "mtu: *nowhere"),
        3,
        "fabric.mtu",
        "alias *nowhere has no anchor &nowhere before it",
    ),
    "two-documents": (GOOD + "---\nfabric: {}\n", 13, None, "one YAML document per file"),
    # redstreams: YAML 1.1 reads a leading 0 as octal and a colon as base 60: 'bandwidth: 010'
    # was a guarantee of 8 %, 'sls: [010]' SL 8 (09 is 9), '1:30' 90; each exit 0
    "octal-share": (
        GOOD.replace("bandwidth: 40", "bandwidth: 040"),
        8,
        "classes[0].bandwidth",
        "'040' is octal in YAML (32): write 40 without the leading 0",
    ),
    "octal-sl": (
        GOOD.replace("    default: true", "    default: true\n    sls: [010]"),
        13,
        "classes[1].sls[0]",
        "'010' is octal in YAML (8): write 10 without the leading 0",
    ),
    "base-60": (
        GOOD.replace("bandwidth: 40", "bandwidth: 40\n    max_latency_us: 1:30"),
        9,
        "classes[0].max_latency_us",
        "'1:30' is a base-60 number in YAML: quote it if it is text",
    ),
    # redteam: YAML 1.1 reads yes/no/on/off as booleans: 'name: yes' said only 'Input should
    # be a valid string', not that YAML had read the word as true
    "boolean-name": (
        GOOD.replace("name: qos", "name: yes"),
        6,
        "classes[0].name",
        "'yes' is a YAML boolean (true): quote it if it is text",
    ),
    "boolean-port-name": (
        GOOD.replace("bandwidth: 40", "bandwidth: 40\n    match: {groups: [{name: g, port_name: [Off]}]}"),
        9,
        "classes[0].match.groups[0].port_name[0]",
        "'Off' is a YAML boolean (false): quote it if it is text",
    ),
    # found by the 10^5-policy fuzz run: PyYAML hands a bad \U escape to chr() unmarked
    "escape-out-of-range": ('classes:\n  "\\U7000F3087": true\n', 1, "classes", "bad escape in a quoted scalar"),
    # found by the same run: a 5e-324 % guarantee divided by zero in the synthesis
    "tiny-bandwidth": (
        GOOD.replace("bandwidth: 40", "bandwidth: 5.0e-324"),
        8,
        "classes[0].bandwidth",
        "greater than or equal to 0.01",
    ),
}


def _write(tmp_path: Path, text: str | bytes) -> Path:
    f = tmp_path / "p.yaml"
    f.write_bytes(text.encode() if isinstance(text, str) else text)
    return f


@pytest.mark.parametrize("name", list(CASES))
def test_yaml_trick_is_one_located_error(name, tmp_path):
    text, line, field, fragment = CASES[name]
    f = _write(tmp_path, text)
    with pytest.raises(InputError) as e:
        load_policy(f)
    assert (e.value.line, e.value.field) == (line, field), str(e.value)
    assert fragment in e.value.detail and "\n" not in str(e.value)


@pytest.mark.parametrize("name", ["merge-key", "self-reference", "int-5000-digits", "sl-as-text", "cap-as-text"])
def test_yaml_trick_through_the_cli_exits_2_with_one_line(name, tmp_path, capsys):
    text, line, field, fragment = CASES[name]
    f = _write(tmp_path, text)
    out = tmp_path / "plan.json"
    with pytest.raises(SystemExit) as e:
        main(["plan", str(f), "-o", str(out)])
    err = capsys.readouterr().err
    assert e.value.code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(f"ibqos: error: {f}:{line}: {field}: ") and fragment in err
    assert not out.exists()


def _limited_memory():
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def test_alias_bomb_is_refused_at_once_in_little_memory(ibqos_cli, tmp_path):
    f = _write(tmp_path, _bomb(9))
    cp = subprocess.run(
        [*ibqos_cli.argv, "plan", str(f), "-o", str(tmp_path / "plan.json")],
        capture_output=True,
        text=True,
        timeout=30,
        preexec_fn=_limited_memory,
    )
    assert cp.returncode == 2, cp.stderr[-500:]
    assert cp.stderr.splitlines() == [f"ibqos: error: {f}:16: l3[1]: aliases expand to more than 2000 values"]


def test_aliases_within_the_budget_load_with_their_lines(tmp_path):
    f = _write(
        tmp_path,
        GOOD.replace("vlarb_cap: {high: 8, low: 8}", "vlarb_cap: &cap {high: 8, low: 8}").replace(
            "  - name: rest\n", "  - name: rest\n    bandwidth_note: *cap\n"
        ),
    )
    with pytest.raises(InputError) as e:  # the alias is copied where it is used
        load_policy(f)
    assert (e.value.line, e.value.field, e.value.detail) == (10, "classes[1].bandwidth_note", "unknown field")
    f = _write(tmp_path, "x: &p 2048\n" + GOOD.replace("fabric:", "fabric: &fab").replace("mtu: 2048", "mtu: *p"))
    with pytest.raises(InputError) as e:
        load_policy(f)
    assert (e.value.line, e.value.field) == (1, "x")  # aliases resolved, then the schema


def test_non_utf8_names_the_byte(tmp_path):
    f = _write(tmp_path, GOOD.replace("qos", "q\u00e9s").encode("latin-1"))
    with pytest.raises(InputError) as e:
        load_policy(f)
    # and its line (redteam: a byte offset alone sends the admin counting)
    assert str(e.value) == f"{f}:6: not UTF-8 (byte {GOOD.index('qos') + 1})"


def test_file_size_is_capped(tmp_path):
    f = _write(tmp_path, GOOD + "# padding\n" * 30000)
    with pytest.raises(InputError) as e:
        load_policy(f)
    assert str(e.value) == f"{f}: larger than 256 KiB; a policy is much smaller"


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(InputError) as e:
        load_policy(tmp_path)
    assert str(e.value) == f"{tmp_path}: is a directory, not a policy"


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_not_a_regular_file_is_refused_without_blocking(ibqos_cli, tmp_path, kind):
    f = tmp_path / "p.yaml"
    if kind == "fifo":
        os.mkfifo(f)  # nobody writes: reading it would block forever
    else:
        f.symlink_to("/dev/zero")  # endless: reading it would exhaust memory
    cp = subprocess.run(
        [*ibqos_cli.argv, "plan", str(f), "-o", str(tmp_path / "plan.json")],
        capture_output=True,
        text=True,
        timeout=30,
        preexec_fn=_limited_memory,
    )
    assert cp.returncode == 2, cp.stderr[-300:]
    assert cp.stderr.splitlines() == [f"ibqos: error: {f}: not a regular file"]


def test_a_key_with_a_newline_stays_on_one_line(tmp_path):
    # found by the fuzzer: {'classes': {'\n': .inf}} printed the raw newline in the field
    f = _write(tmp_path, 'classes: {"\\n": .inf}\n')
    with pytest.raises(InputError) as e:
        load_policy(f)
    assert str(e.value) == f"{f}:1: classes.'\\n': '.inf' is not a finite number"


def test_a_role_takes_a_share_written_as_the_class_does(tmp_path):
    """redfiles: `bandwidth: "30%"` was read for a class but refused for one of its roles
    (`roles: {global: {bandwidth: "30%"}}`: 'unable to parse string as a number'); the share
    type reads both (docs/policy.md: 'also "10%"')."""
    f = _write(
        tmp_path, GOOD.replace("    bandwidth: 40\n", '    bandwidth: 40\n    roles: {global: {bandwidth: "30%"}}\n')
    )
    policy = load_policy(f)
    assert policy.classes[0].bounds("global")[0] == 30 and policy.classes[0].bandwidth == 40
