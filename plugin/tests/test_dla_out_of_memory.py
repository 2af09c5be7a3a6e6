"""dla out of memory while it writes OpenSM's hop rows (docs/hop-rows.md), on real OpenSM 3.3.23:
OpenSM's osm_switch_set_hops fails once for the plugin (the preloaded shim
plugin/tests/fail_set_hops.c, the Nth call dla makes), as when a row's realloc finds no memory.

- With a console, dla writes the rows with the LFTs, in its routing hook: it clears what it wrote,
  says so in one D1A5 line, records the refusal, and the rendered chain's next engine (dfsssp)
  routes a fabric without a credit loop, on the operational VLs dla settled for it.
- Without one (the default), the rows are written after the routing, with the LFTs already on
  their way: dla clears every row, says so in one D1A5 line, and OpenSM sweeps heavily again,
  where dla routes and fills every row."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from dla_testlib import start_dla
from ibqos import osmlog, paths
from ibqos.fabric.dla_record import read_record
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from ibqos.render import render_plan
from ibqos.render.fallback import DLA_CHAIN
from ibqos.verify import verify_fabric
from ibqos.verify.sa_paths import query_path_sls
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly
from test_dla_hop_rows import check_hop_rows

pytestmark = pytest.mark.fabric

ROOT = Path(__file__).resolve().parents[2]
FAIL_AT = "100"  # dla's 100th row write: mid-way through the 42-CA dragonfly's rows
D1A5 = re.compile(r"ERR D1A5: dla: (.*)$")


def shim() -> Path:
    lib = paths.built("plugin/libibqos_fail_set_hops.so")
    if not lib.exists():
        pytest.fail(f"{lib} is missing: run 'make build'")
    return lib


def said(lines) -> list[str]:
    return [m.group(1) for ln in lines if (m := D1A5.search(ln.text))]


def test_with_a_console_dla_falls_back_to_a_deadlock_free_engine(tmp_path, ibsim_fabric, monkeypatch):
    """Before (untested live): nothing showed that the refusal is recorded, that no dla row is
    left, or that the engine after dla routes without a credit loop."""
    monkeypatch.setenv("IBQOS_TEST_FAIL_SET_HOPS", FAIL_AT)
    # two classes on 4 data VLs (max_op_vls 3), where ibsim's ports power up with VLCap VL0-7
    text = (ROOT / "examples" / "two-class.yaml").read_text()
    assert "  data_vls: 8\n" in text
    policy = tmp_path / "policy.yaml"
    policy.write_text(text.replace("  data_vls: 8\n", "  data_vls: 4\n"))
    conf = render_plan(make_plan(load_policy(policy)), tmp_path / "cfg")["opensm.conf"]
    net = dragonfly(*DRAGONFLY_SIZES[42]).write_net(tmp_path / "df42.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        # no periodic sweep: the next heavy sweep, its memory back, would route with dla again
        conf_opts = {"console": "local", "sweep_interval": 0}
        sm = h.start_sm(engine=DLA_CHAIN, plugin=True, conf_files=[conf], conf=conf_opts, preload=[shim()])
        try:
            lines = sm.lines()
            fabric = h.read_back(save=False)
            psl = query_path_sls(fabric, h.env)
            report = verify_fabric(fabric, path_sls=psl)
            record = read_record(sm.dumps)
            assert sm.alive()
        finally:
            sm.stop()
    assert said(lines) == [
        "cannot store hop counts (out of memory); tables cleared, falling back to the next routing engine"
    ]
    assert osmlog.configured_engines(lines) == ["dfsssp"]
    assert record is not None and record.refused
    assert (record.engine.error, record.engine.reason) == ("D1A5", "cannot store hop counts (out of memory)")
    cas = sum(1 for n in fabric.cas() for p in n.ports.values() if p.lid)
    assert report.pairs == report.delivered == cas * (cas - 1), report.defects()
    assert report.cdg_acyclic, " -> ".join(report.cycle)
    # dfsssp's layers stay on the data VLs dla settled for it: the plan's 4, not VLCap's 8
    assert set(psl.by_lids.values()) <= set(range(4)), sorted(set(psl.by_lids.values()))
    assert "max_op_vls 3" in conf.read_text()


def test_without_a_console_the_rows_are_cleared_and_the_next_heavy_sweep_fills_them(
    tmp_path, ibsim_fabric, monkeypatch
):
    monkeypatch.setenv("IBQOS_TEST_FAIL_SET_HOPS", FAIL_AT)
    net = dragonfly(*DRAGONFLY_SIZES[42]).write_net(tmp_path / "df42.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        sm = start_dla(h, conf={"sweep_interval": 1}, preload=[shim()])
        try:
            lines = sm.lines()
            record = read_record(sm.dumps)
            check_hop_rows(sm.dumps)  # every switch's row, each routed LID's hop count
            assert sm.alive()
        finally:
            sm.stop()
    assert said(lines) == [
        "cannot store hop counts (out of memory); hop rows cleared, multicast trees wait for the next heavy sweep"
    ]
    # the failed fill, then the heavy sweep that filled every row
    engines = osmlog.configured_engines(lines)
    assert set(engines) == {"dla"} and len(engines) >= 2, engines
    assert len(osmlog.hop_fill_passes(lines)) >= 1
    assert any("Errors during initialization" in ln.text for ln in lines)
    assert record is not None and record.engine.status == "routed"
