"""ibqos-tablecheck, the plugin's own validation path as a command (issue 13, items 4-9): files
that must not hang, grow, or pass with bytes the plugin would drop; exit 2 and one printable
`file:line: message` for each; warnings on stderr with exit 0."""

from __future__ import annotations

import os

import pytest
from ibqos import paths

HEADER = "version 1\n"
SL2CLASS_CLASS7 = "sl2class 0,1,2,3,4,5,6,7,0,0,0,0,0,0,0,0\n"


def tablecheck(path, timeout=10):
    exe = paths.plugin_dir() / "ibqos-tablecheck"
    if not exe.exists():
        pytest.fail(f"{exe} is missing: run 'make build'")
    # bytes, not text: a raw byte in the output must fail an assertion, not the decoder
    import subprocess

    cp = subprocess.run([str(exe), str(path)], capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    return cp.returncode, cp.stderr


def printable(data: bytes) -> bool:
    return all(0x20 <= b < 0x7F or b == 0x0A for b in data)


def write(tmp_path, name, data: bytes):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "tables.fifo"
    os.mkfifo(fifo)
    rc, err = tablecheck(fifo)  # main: blocks in fopen until the timeout
    assert rc == 2
    assert err == f"{fifo}:0: is a FIFO, not a regular file\n".encode()


def test_devices_and_directories_are_refused(tmp_path):
    assert tablecheck("/dev/zero") == (2, b"/dev/zero:0: is a character device, not a regular file\n")
    assert tablecheck(tmp_path) == (2, f"{tmp_path}:0: is a directory, not a regular file\n".encode())


def test_size_is_capped(tmp_path):
    # one valid header and a 2 MiB comment line: main reads it all and accepts
    big = write(tmp_path, "big.tables", HEADER.encode() + b"#" + b"x" * (2 << 20) + b"\n")
    rc, err = tablecheck(big)
    assert rc == 2
    assert err == f"{big}:0: file is {big.stat().st_size} bytes, more than the 1048576 allowed\n".encode()
    long = write(tmp_path, "long.tables", HEADER.encode() + b"#" + b"x" * 5000 + b"\n")
    assert tablecheck(long) == (2, f"{long}:2: line is longer than 4096 bytes\n".encode())


def test_nul_byte_mid_line_is_refused(tmp_path):
    # main accepted this and silently dropped everything after the NUL
    p = write(tmp_path, "nul.tables", b"version 1\nvlarb ca high 0:1 low - limit 1\0 bogus\n")
    assert tablecheck(p) == (2, f"{p}:2: NUL byte in column 32\n".encode())


def test_control_bytes_are_refused_and_tokens_escaped(tmp_path):
    p = write(tmp_path, "esc.tables", b"version 1\n# \x1b]0;owned\x07\n")
    assert tablecheck(p) == (2, f"{p}:2: control byte 0x1b in column 3 (only tab is allowed)\n".encode())
    p = write(tmp_path, "utf.tables", b"version 1\nbogus\xc3\xa9\xff x\n")
    rc, err = tablecheck(p)
    assert rc == 2
    assert printable(err), err
    assert f"{p}:2: unknown keyword 'bogus\\xc3\\xa9\\xff'".encode() in err


def test_class_past_vl14_is_refused_like_the_plugin_does(tmp_path):
    # class 7 needs VLs 14 and 15; VL15 carries no data, on any fabric (main: accepted)
    p = write(tmp_path, "c7.tables", (HEADER + SL2CLASS_CLASS7).encode())
    assert tablecheck(p) == (
        2,
        f"{p}:2: sl2class: SL 7: class 7 needs VLs 14..15, past VL14, "
        "the last data VL (vls_per_class 2 allows classes 0..6)\n".encode(),
    )
    p = write(tmp_path, "c5.tables", (HEADER + "vls_per_class 3\nsl2class 0,1,2,3,4,5,0,0,0,0,0,0,0,0,0,0\n").encode())
    rc, err = tablecheck(p)
    assert rc == 2 and f"{p}:3: sl2class: SL 5: class 5 needs VLs 15..17".encode() in err
    ok = write(tmp_path, "c4.tables", (HEADER + "vls_per_class 3\nsl2class 0,1,2,3,4,0,0,0,0,0,0,0,0,0,0,0\n").encode())
    assert tablecheck(ok) == (0, b"")


def test_all_zero_weights_warn_but_pass(tmp_path):
    p = write(tmp_path, "zero.tables", b"version 1\nvlarb global high 0:0,1:0 low 2:4 limit 1\n")
    assert tablecheck(p) == (
        0,
        f"warning: {p}:2: vlarb global: every high-table weight is 0, so "
        "that table never sends (write '-' for an empty table)\n".encode(),
    )


def test_group_directives(tmp_path):
    p = write(
        tmp_path, "groups.tables", b"version 1\ngroup 0x0002c903000a1b2c g1\ngroup_pattern ^sw-g(?<group>\\d+)-s\\d+$\n"
    )
    assert tablecheck(p) == (0, b"")
    p = write(tmp_path, "badpat.tables", b"version 1\ngroup_pattern sw-g([0-9]+\n")
    rc, err = tablecheck(p)
    assert rc == 2 and err.startswith(f"{p}:2: group_pattern: 'sw-g([0-9]+' does not compile: ".encode())
