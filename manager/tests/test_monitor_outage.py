"""`ibqos monitor --listen` as a Prometheus exporter under systemd, through a fabric outage:
this host's port unlinked (ibsim's console Unlink: a cable pulled, its switch rebooting)
while it serves, then linked again, then the SM stopped. It ended with exit 3 at the first
sample that failed, taking every metric with it (a unit with Restart= then looped on a fabric
still down); it serves on, exports the failure, drops the per-port series it no longer
measures, says one line when sampling fails and one when it works again, and measures again
by itself, the first interval from the last sample read. Real OpenSM on the patched ibsim."""

from __future__ import annotations

import signal
import time

import pytest
from apply_helpers import make_plan_file
from ibqos_sim.harness import sm_node_name
from ibqos_sim.harness.fabric import ibsim_node_id
from ibqos_sim.harness.ibsim_binary import patched_skip_reason
from ibqos_sim.harness.topology import fat_tree
from test_monitor_scrape_faults import _monitor, _ports

pytestmark = [
    pytest.mark.fabric,
    pytest.mark.skipif(patched_skip_reason() is not None, reason=str(patched_skip_reason())),
]

OK = ("ibqos_monitor_last_sample_success", ())
FAILED = ("ibqos_monitor_sample_failures_total", ())
SAMPLES = ("ibqos_monitor_samples_total", ())
STAMP = ("ibqos_monitor_last_sample_timestamp_seconds", ())
PER_PORT = (
    "ibqos_port_bytes_total",
    "ibqos_class_bytes_total",
    "ibqos_vl_xmit_wait_ticks_total",
    "ibqos_link_utilisation_ratio",
    "ibqos_sla_violation",
    "ibqos_class_share_seconds",
    "ibqos_class_share_ratio",
)
OUTAGE_S = 4.0


def test_a_fabric_outage_is_exported_said_once_and_recovered_from(ibqos_cli, ibsim_fabric, tmp_path):
    _, plan = make_plan_file(tmp_path, "a", 40)
    net = fat_tree(1, 0, 3).write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run", ibsim="patched", console=True) as h:
        sm = h.start_sm(engine="minhop")
        own = f'"{ibsim_node_id(h.netfile, sm_node_name(h.netfile))}"[1]'
        with _monitor(ibqos_cli, h, plan, interval=0.5) as scrape:
            before = scrape.after(2)
            assert (before[OK], before[FAILED]) == (1, 0), before
            linked = _ports(before)
            assert len(linked) == 6, linked  # 3 links, both ends

            h.command(f"Unlink {own}")  # no re-sweep: the SM's own port
            unlinked = time.monotonic()
            down = scrape.until(lambda got: got[FAILED] >= 3, "three failed samples")
            assert down[OK] == 0
            # nothing measured: no per-port series, not the last interval's as if it were now
            assert not [k for k in down if k[0] in PER_PORT], down
            assert ("ibqos_monitor_unmeasured_ports", ()) not in down
            # the last interval judged, and when: kept
            assert (down[SAMPLES], down[STAMP]) == (before[SAMPLES], before[STAMP])
            time.sleep(max(0.0, unlinked + OUTAGE_S - time.monotonic()))
            assert scrape.until(lambda got: got[FAILED] > down[FAILED], "failing on")[OK] == 0

            h.command(f"ReLink {own}")
            first = scrape.until(lambda got: got[SAMPLES] > down[SAMPLES], "an interval judged again")
            assert first[OK] == 1
            # measured from the last sample read, before the outage: its traffic is counted
            if first[SAMPLES] == down[SAMPLES] + 1:  # not missed by the scrapes (0.5 s apart)
                spans = [v for k, v in first.items() if k[0] == "ibqos_class_share_seconds"]
                assert spans and min(spans) > OUTAGE_S, spans
            # OpenSM's next sweep brings the port back to Active: every link measured again
            up = scrape.until(lambda got: got[OK] == 1 and _ports(got) == linked, "every link measured again")
            assert scrape.after(2)[FAILED] == up[FAILED], "failing on after the recovery"

            # the SM stopped (by PID): the LIDs and routes it programmed stay and the PMAs
            # answer, so sampling goes on: an SM gone is no failed sample
            sm.stop()
            assert not sm.alive()
            gone = scrape.after(3)
            assert (gone[OK], gone[FAILED]) == (1, up[FAILED]) and _ports(gone) == linked
            proc = scrape.proc
        assert proc.returncode == 128 + signal.SIGTERM, proc.returncode
        err = proc.stderr.read() if proc.stderr else ""
        lines = [ln for ln in err.splitlines() if ln]
        fails = [ln for ln in lines if ln.startswith("ibqos: sampling failed: ")]
        backs = [ln for ln in lines if ln.startswith("ibqos: sampling works again, after ")]
        assert len(fails) == 1 and len(backs) == 1, err
        assert "no link up behind this host's port" in fails[0], err
        assert len(lines) == 3 and lines[2] == "ibqos: interrupted by SIGTERM", err
