"""OpenSM 3.3.23 configured with the plugin or the engine named twice (ibqos never renders
either; an admin's hand can): OpenSM starts, the first copy routes, one line says what was
ignored, and a fabric dla refuses is refused in one line, not one per copy."""

from __future__ import annotations

import pytest
from dla_testlib import REFUSAL, run_dla
from ibqos import osmlog
from ibqos_sim.harness import Harness
from ibqos_sim.harness.topology import dragonfly

pytestmark = pytest.mark.fabric

D1A6 = "ERR D1A6: dla: "


@pytest.fixture(scope="module")
def fabric(tmp_path_factory):
    d = tmp_path_factory.mktemp("named-twice")
    net = dragonfly(4, 2, 2).write_net(d / "fabric.net")
    with Harness(net, run_dir=d / "run") as h:
        yield h


def test_the_plugin_listed_twice_loads_once_and_says_why_the_second_is_not(fabric):
    """Before: 'ERR D1A6: dla: cannot register the routing engine 'dla'', no cause given."""
    run = run_dla(fabric, conf={"event_plugin_name": "ibqos ibqos"}, check=False, name="plugin-twice")
    lines = run.lines()
    said = [ln.text for ln in lines if D1A6 in ln.text]
    assert said == [
        "ERR D1A6: dla: cannot register the routing engine 'dla': an earlier one did "
        "(event_plugin_name lists ibqos more than once?); this copy of the plugin is not loaded"
    ]
    assert run.rc == 0 and osmlog.configured_engines(lines) == ["dla"]


def test_the_engine_named_twice_refuses_a_fabric_once(fabric):
    """Before: routing_engine dla,dla,minhop on a fabric dla refuses (LMC 1) logged the same
    refusal twice every sweep, the second place computing it again."""
    run = fabric.run_sm(
        engine="dla,dla,minhop", plugin=True, conf={"qos": "TRUE", "lmc": 1}, check=False, name="engine-twice"
    )
    lines = run.lines()
    refused = [ln.text for ln in lines if REFUSAL.search(ln.text)]
    assert len(refused) == 1 and "LMC 1 is set" in refused[0], refused
    assert [ln.text for ln in lines if D1A6 in ln.text] == [
        "ERR D1A6: dla: routing_engine names 'dla' more than once; only its first place routes"
    ]
    assert run.rc == 0 and osmlog.configured_engines(lines) == ["minhop"]
