"""The core's C unit tests (ctest targets), run by `make test` too."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from ibqos.paths import build_dir


def _core_dir() -> Path:
    lib = os.environ.get("IBQOS_SIM_LIB")
    return Path(lib).parent if lib else build_dir() / "ci-sim" / "core"


@pytest.mark.parametrize("name", ["test_evq", "test_vlarb", "test_sim"])
def test_c_unit(name):
    exe = _core_dir() / name
    if not exe.exists():
        pytest.fail(f"{exe} is missing: run 'make build'")
    cp = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert cp.returncode == 0, cp.stderr
