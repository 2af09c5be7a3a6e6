"""The red line: `ibqos verify` and `ibqos status` print one red `CREDIT LOOP` line naming the
engine in force whenever the routing has a credit loop, on real OpenSM routing of ibsim."""

from __future__ import annotations

import re

import pytest
from ibqos_sim.harness.topology import dragonfly

pytestmark = pytest.mark.fabric
LINE = re.compile(r"^CREDIT LOOP: routing in force \((\S+)\) has a credit loop: (.+)$", re.M)
CHANNEL = r"sw-g\d+-s\d+:\d+/\d+"


def _one_line(text: str) -> re.Match:
    found = LINE.findall(text)
    assert len(found) == 1, text[-3000:]
    m = LINE.search(text)
    chans = m.group(2).split(" → ")
    if cut := re.fullmatch(r"… \((\d+) channels\)", chans[-1]):  # a long cycle, cut short
        assert int(cut.group(1)) > len(chans) - 1
    else:
        assert chans[0] == chans[-1]  # the cycle closes on the line
    chans = chans[:-1]
    assert len(chans) >= 2 and all(re.fullmatch(CHANNEL, c) for c in chans), m.group(2)
    return m


def test_minhop_on_the_72_ca_dragonfly_gets_the_red_line(ibqos_cli, tmp_path, ibsim_fabric):
    net = dragonfly(4, 2, 2, 9).write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        sm = h.start_sm(engine="minhop", conf={"qos": "TRUE"})
        h.read_back()  # run/fabric.json for `status RUNDIR`
        live = ibqos_cli("verify", "--live", "--osm-log", sm.log, env=h.env)
        saved = ibqos_cli("verify", h.run_dir, env=h.env)  # dumps and osm.log found in sm0/
        status = ibqos_cli("status", "--live", "--osm-log", sm.log, env=h.env)
        status_dir = ibqos_cli("status", h.run_dir, env=h.env)
        as_json = ibqos_cli("verify", "--live", "--json", "--osm-log", sm.log, env=h.env)
    for cp in (live, saved, status, status_dir):
        assert cp.returncode == 1, cp.stdout + cp.stderr
        assert _one_line(cp.stdout).group(1) == "minhop"
    assert "status: 1 finding(s): credit-loop" in status.stderr  # stdout has the red line itself
    assert as_json.returncode == 1 and '"engine": "minhop"' in as_json.stdout
    assert _one_line(as_json.stderr).group(1) == "minhop"


def test_the_line_names_the_engine_dla_fell_back_to(ibqos_cli, tmp_path, ibsim_fabric):
    """Old chain dla,minhop where dla refuses (LMC 1): the line says minhop, not dla."""
    net = dragonfly(4, 2, 2, 9).write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        sm = h.start_sm(engine="dla,minhop", plugin=True, conf={"qos": "TRUE", "lmc": 1})
        cp = ibqos_cli("status", "--live", "--osm-log", sm.log, env=h.env)
    assert cp.returncode == 1, cp.stdout + cp.stderr
    assert _one_line(cp.stdout).group(1) == "minhop"


def test_no_red_line_when_the_routing_is_deadlock_free(ibqos_cli, tmp_path, ibsim_fabric):
    net = dragonfly(4, 2, 2, 9).write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        sm = h.start_sm(engine="dla,minhop", plugin=True, conf={"qos": "TRUE"})
        verify = ibqos_cli("verify", "--live", "--osm-log", sm.log, env=h.env)
        status = ibqos_cli("status", "--live", "--osm-log", sm.log, env=h.env)
    assert verify.returncode == 0 and not LINE.search(verify.stdout + verify.stderr), verify.stdout
    assert status.returncode == 0 and "routing in force (dla): no credit loops" in status.stdout
    assert "CREDIT LOOP" not in status.stdout
