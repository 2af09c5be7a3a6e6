"""`ibqos compare-engines df72` on real OpenSM: every engine routes and is simulated with the
SLs its paths really have (per pair, from the SA, for lash and dfsssp), an engine OpenSM
replaces is said so, and the credit loop of minhop is named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.fabric
IBQOS = str(Path(sys.executable).parent / "ibqos")


def test_compare_engines_df72(tmp_path):
    out = tmp_path / "cmp"
    r = subprocess.run(
        [
            IBQOS,
            "compare-engines",
            "df72",
            "--engines",
            "dla,lash,dfsssp,updn,minhop",
            "--patterns",
            "uniform,hotspot",
            "--loads",
            "1.0",
            "--time-us",
            "100",
            "--warmup-us",
            "20",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert (out / "compare.png").stat().st_size > 0
    doc = {e["engine"]: e for e in json.loads((out / "compare.json").read_text())["engines"]}
    for engine in ("lash", "dfsssp"):
        # packets really travelled on several SLs: the simulator's own per-SL counters
        for pattern in ("uniform", "hotspot"):
            sls = doc[engine]["curves"][pattern][0]["per_sl_packets"]
            assert len(sls) > 1, (engine, pattern, sls)
        assert not doc[engine]["credit_loop"]
    dla = doc["dla"]
    assert dla["sls_used"] == [0] and dla["vls_used"] == [0, 1] and not dla["credit_loop"]
    assert all(pt["status"] == "done" for c in dla["curves"].values() for pt in c)
    assert doc["minhop"]["credit_loop"] is True
    assert doc["updn"]["routed_by"] == "minhop" and "instead" in doc["updn"]["skipped"]
    assert "CREDIT LOOP" in r.stdout
