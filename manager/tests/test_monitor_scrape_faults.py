"""What an admin's Prometheus scrapes from `ibqos monitor --listen` while the fabric changes
under it: a switch-to-switch link down (half the fabric cut off from the SM) and back, a CA's
link down, the PMA counters reset by someone else (`perfquery -R`). Every scrape is valid for
`promtool check metrics`, has each label set once, no counter goes down, and a port that is not
measured has no series. The nodes' descriptions are an admin's: two switches share one (as
unmanaged switches of a model do), others carry quotes, a backslash, non-ASCII, and one is cut
by NodeDescription's 64 bytes inside a UTF-8 sequence. Real OpenSM on the patched ibsim."""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from apply_helpers import child_env, make_plan_file
from ibqos_sim.harness.ibsim_binary import patched_skip_reason
from ibqos_sim.harness.topology import fat_tree
from prometheus_client.parser import text_string_to_metric_families
from test_monitor_live import _free_port

pytestmark = [
    pytest.mark.fabric,
    pytest.mark.skipif(patched_skip_reason() is not None, reason=str(patched_skip_reason())),
]

SAME = "SwitchIB Mellanox Technologies"
ODD = 'node "q" \\ back ünï ☃'
LONG = "x" * 62 + "é tail"  # the 63rd byte is the first of é's two: ibsim keeps 63

Series = tuple[str, tuple[tuple[str, str], ...]]


def _net(tmp_path):
    """A 2-leaf fat tree whose leaves share a description and whose far CAs have odd ones."""
    text = fat_tree(2, 1, 2).write_net(tmp_path / "plain.net").read_text()
    for node, desc in (("leaf0", SAME), ("leaf1", SAME), ("ca-l1-h0", ODD), ("ca-l1-h1", LONG)):
        kind = "Switch\t3" if node.startswith("leaf") else "Hca\t1"
        text = text.replace(f'{kind} "{node}"\n', f'{kind} "{node}" # {desc}\n')
    net = tmp_path / "fabric.net"
    net.write_text(text)
    return net


class Scraper:
    def __init__(self, port: int, proc: subprocess.Popen):
        self.port, self.proc = port, proc
        self.last: dict[Series, float] = {}
        self.samples = 0.0

    def after(self, n: int) -> dict[Series, float]:
        """The first scrape after `n` more intervals, checked."""
        want = self.samples + n
        got = self.until(lambda got: got[("ibqos_monitor_samples_total", ())] >= want, f"{want} samples")
        self.samples = got[("ibqos_monitor_samples_total", ())]
        return got

    def until(self, done: Callable[[dict[Series, float]], bool], what: str) -> dict[Series, float]:
        """The first checked scrape that is `done`, within 30 s."""
        deadline = time.monotonic() + 30
        while True:
            assert self.proc.poll() is None, self.proc.stderr.read() if self.proc.stderr else ""
            assert time.monotonic() < deadline, f"not {what} in 30 s: {self.last}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as r:
                    text = r.read().decode()
            except OSError:  # not serving yet
                time.sleep(0.05)
                continue
            got = self._check(text)
            self.last = got
            if done(got):
                return got
            time.sleep(0.05)

    def _check(self, text: str) -> dict[Series, float]:
        cp = subprocess.run([shutil.which("promtool") or "promtool", "check", "metrics"], input=text, text=True,
                            capture_output=True)  # fmt: skip
        assert cp.returncode == 0, cp.stdout + cp.stderr
        got: dict[Series, float] = {}
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                key = (s.name, tuple(sorted(s.labels.items())))
                assert key not in got, f"{key} exported twice"
                got[key] = s.value
                if fam.type == "counter" and key in self.last:
                    assert s.value >= self.last[key], f"{key} went down: {self.last[key]} -> {s.value}"
        return got


@contextmanager
def _monitor(ibqos_cli, h, plan, *extra: str, user: int | None = None, interval: float = 0.2) -> Iterator[Scraper]:
    port = _free_port()
    cmd = [*ibqos_cli.argv, "monitor", "--plan", str(plan), "--sim-socket", h.sock, "--json", *extra]
    cmd += ["--listen", f"127.0.0.1:{port}", "--interval", str(interval)]
    if user is not None:
        cmd = [shutil.which("setpriv") or "setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=child_env())
    try:
        yield Scraper(port, proc)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _ports(got: dict[Series, float], name: str = "ibqos_port_bytes_total") -> dict[tuple[str, str], str]:
    """(guid, port) -> node label of the series `name`."""
    return {(dict(k)["guid"], dict(k)["port"]): dict(k)["node"] for n, k in got if n == name}


def test_scrapes_across_link_faults_and_a_counter_reset(ibqos_cli, ibsim_fabric, tmp_path):
    _, plan = make_plan_file(tmp_path, "a", 40)
    with ibsim_fabric(_net(tmp_path), run_dir=tmp_path / "run", ibsim="patched", console=True) as h:
        sm = h.start_sm(engine="minhop")
        model = h.read_back(save=False)
        linked = {
            (f"0x{n.guid:016x}", str(pn)): n.desc for n in model.nodes.values() for pn, p in n.ports.items()
            if pn and p.remote
        }  # fmt: skip
        assert {SAME, ODD} <= set(linked.values()) and LONG[:62] + "\ufffd" in linked.values(), linked
        by_desc = {n.desc: n for n in model.nodes.values() if n.desc != SAME}
        leaf0 = next(n for n in model.nodes.values() if n.desc == SAME and by_desc["ca-l0-h0"].guid in
                     {p.remote[0] for p in n.ports.values() if p.remote})  # fmt: skip
        up = next(pn for pn, p in leaf0.ports.items() if p.remote and model.nodes[p.remote[0]].kind == "switch")
        near = {(g, p) for (g, p) in linked if int(g, 16) in (leaf0.guid, by_desc["ca-l0-h0"].guid,
                                                              by_desc["ca-l0-h1"].guid)}  # fmt: skip
        near.discard((f"0x{leaf0.guid:016x}", str(up)))
        with _monitor(ibqos_cli, h, plan) as scrape:
            # every linked port once, labelled with its description as read back, escaped and back
            assert _ports(scrape.after(2)) == linked

            h.unlink(f"0x{leaf0.guid:x}", up, sm=sm)  # by GUID: its description is shared
            # the spine and the other leaf are cut off from the SM: not measured, no series
            assert set(_ports(scrape.after(2))) == near
            for name in ("ibqos_link_utilisation_ratio", "ibqos_class_bytes_total", "ibqos_sla_violation"):
                assert {k for k in _ports(scrape.last, name)} <= near, name

            h.relink(f"0x{leaf0.guid:x}", up, sm=sm)
            # measured again from the sample after the one that saw them back (no baseline before)
            assert _ports(scrape.after(3)) == linked

            ca = by_desc["ca-l0-h1"]
            h.unlink(ca.desc, 1, sm=sm)
            sw_guid, sw_port = ca.ports[1].remote
            gone = {(f"0x{ca.guid:016x}", "1"), (f"0x{sw_guid:016x}", str(sw_port))}
            assert set(_ports(scrape.after(2))) == set(linked) - gone
            h.relink(ca.desc, 1, sm=sm)
            assert _ports(scrape.after(3)) == linked

            # someone clears every port's counters of the leaf (PortCounters, the 64-bit
            # extended ones, then PortXmitDataSL alone): no counter goes down (checked by every
            # scrape), and the leaf is still measured
            for reset in (["-R"], ["-x", "-R"], ["--xmtsl", "-R"]):
                h.diag(["perfquery", *reset, "-a", str(leaf0.ports[0].lid)])
                assert _ports(scrape.after(2)) == linked, reset


def test_an_osm_log_and_a_verdict_that_become_unreadable_during_a_run_do_not_end_it(ibqos_cli, ibsim_fabric, tmp_path):
    """The monitor runs as nobody; logrotate makes the new log 0600 for root, and a FIFO is put
    at the verdict's path. It ended with exit 2 in the sampling loop; now it samples on without
    the engine or the verdict, says each once, and exports them again when the files are back."""
    import json
    import os
    import tempfile

    net = fat_tree(1, 0, 2).write_net(tmp_path / "fabric.net")
    with tempfile.TemporaryDirectory() as d, ibsim_fabric(net, run_dir=tmp_path / "run", ibsim="patched") as h:
        open_dir = Path(d)  # what nobody may read: the plan, the log, the verdict
        open_dir.chmod(0o755)
        _, plan = make_plan_file(open_dir, "a", 40)
        plan.chmod(0o644)
        verdict = open_dir / "verdict.json"
        verdict.write_text(json.dumps({"schema": "ibqos.verdict/1", "read_at": 1.7e9, "source": "live",
                                       "engine": "minhop", "credit_loop": False}))  # fmt: skip
        sm = h.start_sm(engine="minhop")
        log = open_dir / "osm.log"
        shutil.copy(sm.log, log)
        for f in (log, verdict):
            f.chmod(0o644)
        with _monitor(ibqos_cli, h, plan, "--osm-log", str(log), "--verdict", str(verdict), user=65534) as scrape:
            got = scrape.after(2)
            assert got[("ibqos_routing_engine_info", (("engine", "minhop"),))] == 1
            assert got[("ibqos_credit_loop", (("engine", "minhop"),))] == 0
            log.rename(log.with_suffix(".log.1"))  # logrotate, with `create 0600 root root`
            log.write_text(Path(sm.log).read_text())
            log.chmod(0o600)
            verdict.rename(verdict.with_suffix(".old"))
            os.mkfifo(verdict)
            got = scrape.after(3)
            assert not [k for k in got if k[0] in ("ibqos_routing_engine_info", "ibqos_credit_loop")], got
            assert got[("ibqos_credit_loop_verdict_unreadable", ())] == 1
            log.chmod(0o644)
            verdict.unlink()
            verdict.with_suffix(".old").rename(verdict)
            got = scrape.after(2)
            assert got[("ibqos_routing_engine_info", (("engine", "minhop"),))] == 1
            assert got[("ibqos_credit_loop", (("engine", "minhop"),))] == 0
            proc = scrape.proc
        err = proc.stderr.read() if proc.stderr else ""
        assert err.count(f"ibqos: error: {log}: Permission denied") == 1, err
        assert err.count(f"ibqos: error: {verdict}: not a regular file") == 1, err
