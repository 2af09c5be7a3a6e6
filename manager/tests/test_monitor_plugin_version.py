"""`ibqos monitor --opensm-conf` raises the finding `ibqos status --live` raises when the OpenSM it
follows runs another release's plugin (docs/monitor.md, "A restart owed after an upgrade"):
the same line, and `ibqos_plugin_version_mismatch` 1 for the alert. Before, only `status` said
so, and a monitor on an SM host upgraded without an OpenSM restart stayed quiet. Real OpenSM
on ibsim; the older plugin's record is planted as test_apply_plugin_version does it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from apply_helpers import live_sm_patched, monitor_once, run_status  # noqa: F401 (fixture)
from ibqos.fabric.dla_record import RECORD_FILE
from test_apply_plugin_version import _older_records, _plant, _refusal, _release

pytestmark = pytest.mark.fabric


def _monitor(ibqos_cli, h, sm, plan: Path, prom: Path) -> tuple[int, list[str], dict[tuple, float]]:
    """One interval: exit code, the plugin-version findings, the gauge's samples by labels."""
    return monitor_once(ibqos_cli, h, sm, plan, prom, "plugin-version", "ibqos_plugin_version_mismatch")


def test_the_monitor_raises_status_finding_and_exports_it_for_an_opensm_on_an_older_plugin(
    ibqos_cli, live_sm_patched, tmp_path
):
    h, sm, _, path_a = live_sm_patched
    prom = tmp_path / "ibqos.prom"
    real = json.loads((sm.dumps / RECORD_FILE).read_text())
    assert _monitor(ibqos_cli, h, sm, path_a, prom)[1:] == (
        [],
        {(("installed", _release()), ("loaded", _release())): 0.0},
    )
    for version, record in _older_records(real):
        _plant(sm, record)
        rc, found, gauge = _monitor(ibqos_cli, h, sm, path_a, prom)
        assert (rc, found) == (1, [_refusal(sm.pid, version)])
        st = run_status(ibqos_cli, h, sm, "--live", "--json")
        assert [f["message"] for f in json.loads(st.stdout)["findings"] if f["kind"] == "plugin-version"] == found
        loaded = "unrecorded" if "plugin_version" not in record else version
        assert gauge == {(("installed", _release()), ("loaded", loaded)): 1.0}
