"""What `ibqos monitor` keeps and exports per port on a real fabric (OpenSM on the patched
ibsim), run from cron as documented: `--once --state FILE --textfile FILE.prom`.

- `ibqos_vl_xmit_wait_ticks_total` exists at 0 from the first interval for every data VL a
  measured port runs (its OperationalVLs, read back from the fabric), so `rate()` and
  `absent()` have a series before the first wait; before, a VL's series appeared only with its
  first tick, and on an idle fabric there was none at all.
- a port gone from the fabric (its link down) keeps nothing: its totals leave the state file,
  which shrinks; before, every port a fabric ever had stayed in it (and in memory) forever."""

from __future__ import annotations

import json

import pytest
from apply_helpers import child_env, make_plan_file
from ibqos_sim.harness.ibsim_binary import patched_skip_reason
from ibqos_sim.harness.topology import fat_tree
from prometheus_client.parser import text_string_to_metric_families

pytestmark = [
    pytest.mark.fabric,
    pytest.mark.skipif(patched_skip_reason() is not None, reason=str(patched_skip_reason())),
]


def _once(ibqos_cli, h, plan, tmp_path) -> tuple[dict, dict]:
    """One cron run: the JSON document and the exported series (name, labels) -> value."""
    prom = tmp_path / "ibqos.prom"
    r = ibqos_cli(
        "monitor", "--plan", plan, "--sim-socket", h.sock, "--once", "--json", "--interval", "0.3",
        "--state", tmp_path / "state.json", "--textfile", prom, env=child_env(),
    )  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    series = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(prom.read_text())
        for s in fam.samples
    }
    return json.loads(r.stdout), series


def _ports(doc: dict) -> set[tuple[str, int]]:
    """(guid, port) of every port a --state document keeps a total of."""
    totals = doc["monitor_totals"]
    return {(g, p) for kind in ("port_bytes", "class_bytes", "vl_xmit_wait") for g, p, *_ in totals[kind]}


def test_wait_counters_exist_from_the_first_interval_and_a_gone_ports_totals_leave_the_state(
    ibqos_cli, ibsim_fabric, tmp_path
):
    _, plan = make_plan_file(tmp_path, "a", 40)
    net = fat_tree(2, 1, 2).write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run", ibsim="patched", console=True) as h:
        sm = h.start_sm(engine="minhop")
        model = h.read_back(save=False)
        doc, series = _once(ibqos_cli, h, plan, tmp_path)
        asked = {(int(ln["guid"], 16), ln["port"]) for ln in doc["links"] if ln["source"] == "xmit"}
        assert len(asked) >= 8, doc["links"]
        want = {(f"0x{g:016x}", str(p), str(vl)) for g, p in asked for vl in range(model.nodes[g].ports[p].op_vls)}
        assert all(model.nodes[g].ports[p].op_vls >= 2 for g, p in asked)
        waits = {
            (d["guid"], d["port"], d["vl"]): v
            for (name, labels), v in series.items()
            if name == "ibqos_vl_xmit_wait_ticks_total" and (d := dict(labels))
        }
        assert set(waits) == want and set(waits.values()) == {0.0}  # an idle fabric

        state = tmp_path / "state.json"
        before = json.loads(state.read_text())
        ca = next(n for n in model.nodes.values() if n.kind == "ca" and n.desc == "ca-l1-h1")
        sw_guid, sw_port = ca.ports[1].remote
        gone = {(f"0x{ca.guid:016x}", 1), (f"0x{sw_guid:016x}", sw_port)}
        assert gone <= _ports(before)
        size = state.stat().st_size
        h.unlink(ca.desc, 1, sm=sm)
        doc, series = _once(ibqos_cli, h, plan, tmp_path)
        after = json.loads(state.read_text())
        assert _ports(after) == _ports(before) - gone
        assert state.stat().st_size < size
        exported = {(dict(k)["guid"], int(dict(k)["port"])) for n, k in series if n == "ibqos_port_bytes_total"}
        assert not exported & gone  # a gone port exports nothing, as before
