"""A plan's data VLs are what the ports run: for every count a port can run, the rendered
opensm.conf reads back from OpenSM's own parser as written (max_op_vls is the VLCap code,
qos_*max_vls the count), real OpenSM on ibsim programs that many OperationalVLs on every
port, and when dla refuses the fabric the rendered fallback chain routes deadlock-free by
`ibqos verify --live` with the SA's path SLs (test_fallback.py).

ibsim's ports all report VLCap 4 (VL0-7, sim_net.c), and ibsim refuses an OperationalVLs
above VLCap: a plan of 15 data VLs renders max_op_vls 5, and its ports run 8 there.
"""

from __future__ import annotations

import pytest
from ibqos import paths
from ibqos.apply.validate import validate_opensm_conf
from ibqos.errors import ExternalError, InputError
from ibqos.osmconf import parse
from ibqos.proc import run_command
from ibqos.render.fallback import DLA_CHAIN
from ibqos.vls import DATA_VL_COUNTS
from vl_count_plans import linked_op_vls, render_count

IBSIM_VLCAP_VLS = 8
# VLCap codes written out by hand (IBA 14.2.5.6), not computed by the code under test.
CODE = {1: 1, 2: 2, 4: 3, 8: 4, 15: 5}


def test_every_count_a_port_runs_is_covered():
    assert tuple(CODE) == DATA_VL_COUNTS


@pytest.mark.parametrize("data_vls", DATA_VL_COUNTS)
def test_opensm_parses_the_rendered_options_as_written(tmp_path, data_vls):
    """`opensm -F rendered -c dump`: OpenSM's option table reads the file and writes back
    what it took, so a key it did not know or a value it re-read differently shows."""
    _, files = render_count(tmp_path, data_vls)
    rendered = parse(files["opensm.conf"].read_text())
    assert rendered["max_op_vls"] == str(CODE[data_vls])
    opensm = paths.require_tool("opensm", "opensm")
    dump = tmp_path / "dump.conf"
    run_command([opensm, "-F", str(files["opensm.conf"]), "-c", str(dump)], timeout=30, cwd=tmp_path)
    back = parse(dump.read_text())
    assert {k: back.get(k) for k in rendered} == rendered
    for kind in ("", "ca_", "swe_", "sw0_"):
        assert back[f"qos_{kind}max_vls"] == str(data_vls)  # a count (3.3.23: only torus-2QoS reads it)
    validate_opensm_conf(files["opensm.conf"])


def test_a_count_written_as_max_op_vls_is_refused_before_apply(tmp_path):
    """OpenSM itself takes `max_op_vls 8` silently (it caps at the VLCap code, 5 at most), which
    is how a count passed for a code; apply's check names it."""
    _, files = render_count(tmp_path, 4)
    bad = tmp_path / "count.conf"
    bad.write_text(files["opensm.conf"].read_text().replace("max_op_vls 3", "max_op_vls 8"))
    with pytest.raises(ExternalError, match=r"max_op_vls: 8 is not a VLCap code 1-5"):
        validate_opensm_conf(bad)


@pytest.mark.parametrize("line", ["sweep_interval abc", "log_max_size lots"])
def test_a_value_opensm_cannot_read_is_refused_before_apply(tmp_path, line):
    """OpenSM 3.3.23 logs "-E- Parsing error in field ..." for a non-numeric value, keeps its
    default and exits 0: the check must not take that exit status for a clean parse."""
    _, files = render_count(tmp_path, 2)
    bad = tmp_path / "typo.conf"
    bad.write_text(files["opensm.conf"].read_text() + line + "\n")
    with pytest.raises(InputError, match=r"-E- Parsing error in field " + line.split()[0]):
        validate_opensm_conf(bad)


def _vl_caps(fabric) -> set[int]:
    return {p.vl_cap for n in fabric.nodes.values() for p in n.ports.values() if p.remote}


@pytest.mark.fabric
@pytest.mark.parametrize("data_vls", DATA_VL_COUNTS)
def test_ports_run_the_plans_data_vls(tmp_path, data_vls, ibsim_fabric):
    from ibqos_sim.harness.topology import dragonfly

    plan, files = render_count(tmp_path, data_vls)
    dla = plan.fabric.routing == "dla"
    topo = dragonfly(3, 2, 3, 7)
    net = topo.write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run", console=False) as h:
        run = h.run_sm(engine=DLA_CHAIN if dla else "minhop", plugin=dla, conf_files=[files["opensm.conf"]])
        fabric = h.read_back()
    assert _vl_caps(fabric) == {IBSIM_VLCAP_VLS}
    want = min(data_vls, IBSIM_VLCAP_VLS)
    ops = linked_op_vls(fabric)
    assert len(ops) == 2 * len(topo.links())  # every linked port, CAs' and switches'
    assert {k: v for k, v in ops.items() if v != want} == {}
    if dla:  # the plugin read max_op_vls as the same code: dla found its VLs and routed
        assert run.configured_engines() == ["dla"]
