"""ibqos.vls against docs/vlcap-vectors.json, the pairs the plugin's C (dla_vls_from_code, also
the read-back tool's) is tested on in plugin/tests/unit/test_vlcap.c: one VLCap code table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ibqos.vls import DATA_VL_COUNTS, vlcap_code, vls_of_code

DOC = json.loads((Path(__file__).resolve().parents[2] / "docs" / "vlcap-vectors.json").read_text())
VECTORS = [(v["code"], v["vls"]) for v in DOC["vectors"]]


def test_the_file_covers_every_code_a_port_reports():
    assert {c for c, _ in VECTORS} >= set(range(7))
    assert tuple(v for _, v in sorted(VECTORS) if v) == DATA_VL_COUNTS


@pytest.mark.parametrize("code, vls", VECTORS)
def test_code_to_count_and_back(code, vls):
    assert vls_of_code(code) == vls
    if vls:
        assert vlcap_code(vls) == code


@pytest.mark.parametrize("count", [0, 3, 5, 7, 16, -1, True, "8", 8.0])
def test_a_count_no_port_runs_has_no_code(count):
    with pytest.raises(ValueError, match=r"data VLs: a port runs 1, 2, 4, 8 or 15 \(PortInfo VLCap\)"):
        vlcap_code(count)
