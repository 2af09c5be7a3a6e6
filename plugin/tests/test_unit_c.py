"""The C unit tests of the routing library (group discovery, LFTs + CDG check, SL2VL, table
parser), built by CMake next to libibqos.so; also registered with ctest."""

from __future__ import annotations

import pytest

from ibqos import paths
from ibqos.proc import run_command


def test_c_unit_tests_pass():
    exe = paths.plugin_dir() / "dla_unit_tests"
    if not exe.exists():
        pytest.fail(f"{exe} is missing: run 'make build'")
    cp = run_command([str(exe)], timeout=120, check=False)
    assert cp.returncode == 0, cp.stderr
    assert "all unit tests passed" in cp.stdout
