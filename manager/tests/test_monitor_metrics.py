"""Issue 23: the monitor's metric set is the one docs/monitor.md documents (the doc is the
spec: its table is parsed here, not copied), and the alerting rules and the dashboard use only
metrics the exposition has; `promtool test rules` fires the SLA alert as the rules say."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from ibqos.monitor.export import MonitorCollector, registry_for
from ibqos.monitor.judge import ClassLoad, Judged, LinkLoad
from ibqos.verdict import Verdict
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

DOC = Path(__file__).resolve().parents[2] / "docs" / "monitor.md"
METRIC = re.compile(r"\bibqos_[a-z_]+\b")


def documented() -> dict[str, tuple[str, set[str]]]:
    """name -> (type, labels) from the table under "## Metrics"."""
    section = DOC.read_text().split("\n## Metrics\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].startswith("`ibqos_"):
            labels = {x.strip() for x in cells[2].split(",") if x.strip()}
            rows[cells[0].strip("`")] = (cells[1], labels)
    assert len(rows) >= 5, f"no metrics table in {DOC}"
    return rows


def judged_interval() -> Judged:
    """An interval with everything in it: a link with a class, a violation and VL wait, one
    measured over the interval and one over a sub-window, an ambiguous direction."""
    link = LinkLoad(
        "sw1", 0x20, 3, "ca1", 1, "xmit", 0.95, True,
        [ClassLoad("bulk", 4000, 0.02, 0.1, 40.0, 7, violation=True)], {2: 7}, "interval", 10.0, 4000,
    )  # fmt: skip
    fast = LinkLoad(
        "sw1", 0x20, 4, "ca2", 1, "xmit", 0.5, False,
        [ClassLoad("bulk", 10**8, 0.5, 16.0, 40.0, 0)], {}, "window", 0.05, 10**11,
    )  # fmt: skip
    return Judged(10.0, [link, fast], [], ["ca9[1]"], ambiguous=["ca8[1]"])


def exposition() -> str:
    """What the exporter writes after one judged interval with everything in it (above), the
    engine known, and an OpenSM followed (--opensm-conf)."""
    c = MonitorCollector()
    c.follows_opensm = True
    verdict = Verdict(read_at=1.7e9, source="live:ibqos-readback", engine="dla", credit_loop=True)
    c.update(
        judged_interval(), "dla", verdict, opensm_pid=4242, plugin=("0.0.9", True), other_config=True, standby=True
    )
    return generate_latest(registry_for(c)).decode()


def samples(text: str) -> dict[str, tuple[str, set[str]]]:
    """sample name -> (family type, label names)"""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[s.name] = (fam.type, set(s.labels))
    return out


def test_the_exposition_has_exactly_the_documented_metrics_and_labels():
    doc, got = documented(), samples(exposition())
    assert set(got) == set(doc)
    for name, (kind, labels) in doc.items():
        # the text format has no info type: an info metric is a gauge named *_info
        assert got[name] == ({"info": "gauge"}.get(kind, kind), labels), name


def test_the_credit_loop_is_the_verdicts_and_absent_without_one():
    """The monitor exports the verifier's verdict as `ibqos status --verdict` kept it, with the
    time its tables were read; no verdict, or one that could not judge, exports no 0."""
    text = exposition()
    assert 'ibqos_credit_loop{engine="dla"} 1.0' in text
    assert "ibqos_credit_loop_read_timestamp_seconds 1.7e+09" in text
    c = MonitorCollector()
    c.update(Judged(10.0, [], [], []), "dla")
    text = generate_latest(registry_for(c)).decode()
    assert "ibqos_credit_loop{" not in text and "ibqos_credit_loop_read_timestamp_seconds" not in text
    c.update(Judged(10.0, [], [], []), "updn", Verdict(read_at=1.7e9, source="live", engine="updn", credit_loop=None))
    text = generate_latest(registry_for(c)).decode()
    assert "ibqos_credit_loop{" not in text and "ibqos_credit_loop_read_timestamp_seconds 1.7e+09" in text


@pytest.fixture(scope="module")
def config(ibqos_cli, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("config")
    cp = subprocess.run(
        [*ibqos_cli.argv, "monitor", "--write-config", str(out)], capture_output=True, text=True, timeout=60
    )
    assert cp.returncode == 0, cp.stderr
    return out


def test_every_rule_and_panel_uses_only_metrics_the_exposition_has(config):
    exposed = set(samples(exposition()))
    rules = yaml.safe_load((config / "ibqos-alerts.rules.yml").read_text())
    exprs = [r["expr"] for g in rules["groups"] for r in g["rules"]]
    exprs += re.findall(r'"expr": "((?:[^"\\]|\\.)*)"', (config / "ibqos-grafana-dashboard.json").read_text())
    assert len(exprs) >= 10
    for expr in exprs:
        used = set(METRIC.findall(expr))
        assert used and used <= exposed, (expr, used - exposed)


# what every `promtool test rules` file of the alerting rules begins with
RULES_HEAD = """
rule_files: [ibqos-alerts.rules.yml]
evaluation_interval: 1m
tests:
"""

PROMTOOL_TEST = """
rule_files: [ibqos-alerts.rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'ibqos_sla_violation{class="bulk",node="sw1",guid="0x20",port="3",instance="h:9687",job="ibqos"}'
        values: '0 0 1x30'
      - series: 'ibqos_sla_violation{class="qos",node="sw1",guid="0x20",port="3",instance="h:9687",job="ibqos"}'
        values: '0x32'
      # another switch with the same node description (unmanaged switches of one model): its
      # port 3 is not squeezed, and its 0 neither hides nor takes the other's alert
      - series: 'ibqos_sla_violation{class="bulk",node="sw1",guid="0x21",port="3",instance="h:9687",job="ibqos"}'
        values: '0x32'
    alert_rule_test:
      - eval_time: 8m   # violating for 6 minutes: pending, not firing
        alertname: IbqosClassBelowGuaranteedShare
        exp_alerts: []
      - eval_time: 15m
        alertname: IbqosClassBelowGuaranteedShare
        exp_alerts:
          - exp_labels: {severity: warning, class: bulk, node: sw1, guid: "0x20", port: "3"}
            exp_annotations:
              summary: "QoS class bulk below its guaranteed share on sw1 port 3"
              description: {description}
"""


def promtool_test(config: Path, name: str, test: str, texts: dict[str, tuple[str, str]]) -> None:
    """`promtool test rules` on `test`, with each {key} replaced by the (alert, annotation) text
    the rules give, JSON-quoted: fixed texts are the rules', templated ones are what is checked."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool not found: Debian package prometheus (make deps)")
    rules = {
        r["alert"]: r for r in yaml.safe_load((config / "ibqos-alerts.rules.yml").read_text())["groups"][0]["rules"]
    }
    for key, (alert, annotation) in texts.items():
        test = test.replace("{" + key + "}", json.dumps(rules[alert]["annotations"][annotation]))
    (config / name).write_text(test)
    cp = subprocess.run([promtool, "test", "rules", name], cwd=config, capture_output=True, text=True)
    assert cp.returncode == 0 and "SUCCESS" in cp.stdout, cp.stdout + cp.stderr


def test_promtool_fires_the_sla_alert_after_the_hold_and_only_for_the_squeezed_class(config):
    promtool_test(
        config, "sla.test.yml", PROMTOOL_TEST, {"description": ("IbqosClassBelowGuaranteedShare", "description")}
    )


CREDIT_TEST = """
rule_files: [ibqos-alerts.rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'ibqos_credit_loop{engine="minhop",instance="h:9687",job="ibqos"}'
        values: '0 0 1 1 1'
      - series: 'ibqos_credit_loop_read_timestamp_seconds{instance="h:9687",job="ibqos"}'
        values: '0x80'
    alert_rule_test:
      - eval_time: 1m
        alertname: IbqosCreditLoop
        exp_alerts: []
      - eval_time: 2m   # at once: a loop is not a condition to wait out
        alertname: IbqosCreditLoop
        exp_alerts:
          - exp_labels: {severity: critical, engine: minhop, instance: "h:9687", job: ibqos}
            exp_annotations:
              summary: "The routing in force (minhop) has a credit loop: the fabric can deadlock"
              description: {description}
      - eval_time: 4m   # read at time 0: 240 s old, not stale yet
        alertname: IbqosCreditLoopVerdictStale
        exp_alerts: []
      - eval_time: 70m  # 4200 s old
        alertname: IbqosCreditLoopVerdictStale
        exp_alerts:
          - exp_labels: {severity: info, instance: "h:9687", job: ibqos}
            exp_annotations:
              summary: {stale}
"""


def test_promtool_fires_the_credit_loop_alert_at_once_and_the_stale_verdict_after_an_hour(config):
    texts = {"description": ("IbqosCreditLoop", "description"), "stale": ("IbqosCreditLoopVerdictStale", "summary")}
    promtool_test(config, "loop.test.yml", CREDIT_TEST, texts)


UNREADABLE_TEST = """
rule_files: [ibqos-alerts.rules.yml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'ibqos_credit_loop_verdict_unreadable{instance="h:9687",job="ibqos"}'
        values: '0 0 1 1'
    alert_rule_test:
      - eval_time: 1m
        alertname: IbqosCreditLoopVerdictUnreadable
        exp_alerts: []
      - eval_time: 2m   # the stale alert cannot fire: the file gives no read_at any more
        alertname: IbqosCreditLoopVerdictUnreadable
        exp_alerts:
          - exp_labels: {severity: warning, instance: "h:9687", job: ibqos}
            exp_annotations:
              summary: {summary}
"""


def test_promtool_fires_the_unreadable_verdict_alert_at_once(config):
    texts = {"summary": ("IbqosCreditLoopVerdictUnreadable", "summary")}
    promtool_test(config, "unreadable.test.yml", UNREADABLE_TEST, texts)


PLUGIN_TEST = (
    RULES_HEAD
    + """  - interval: 1m   # upgraded at 2m, OpenSM restarted at 20m
    input_series:
      - series: 'ibqos_plugin_version_mismatch{loaded="0.1.0",installed="0.1.0",instance="h:9687",job="ibqos"}'
        values: '0 0 _x18 _x10'
      - series: 'ibqos_plugin_version_mismatch{loaded="0.1.0",installed="0.1.1",instance="h:9687",job="ibqos"}'
        values: '_ _ 1x18 _x10'
      - series: 'ibqos_plugin_version_mismatch{loaded="0.1.1",installed="0.1.1",instance="h:9687",job="ibqos"}'
        values: '_x20 0x10'
    alert_rule_test:
      - eval_time: 8m   # a restart planned with the upgrade has the hold to happen
        alertname: IbqosPluginVersionMismatch
        exp_alerts: []
      - eval_time: 15m
        alertname: IbqosPluginVersionMismatch
        exp_alerts:
          - exp_labels: {severity: warning, loaded: "0.1.0", installed: "0.1.1", instance: "h:9687", job: ibqos}
            exp_annotations:
              summary: "OpenSM runs ibqos plugin 0.1.0, ibqos 0.1.1 is installed: restart it"
              description: {description}
      - eval_time: 28m
        alertname: IbqosPluginVersionMismatch
        exp_alerts: []
"""
)


def test_promtool_fires_the_plugin_version_alert_after_the_hold_and_not_after_the_restart(config):
    texts = {"description": ("IbqosPluginVersionMismatch", "description")}
    promtool_test(config, "plugin.test.yml", PLUGIN_TEST, texts)


# an SM not running the plan: an OpenSM on another file (other-config), or this one a standby after
# a failover (standby); from 2m, until it is restarted on the file / master again at 20m
SM_ROLE_TEST = (
    RULES_HEAD
    + """  - interval: 1m
    input_series:
      - series: '{metric}{{instance="h:9687",job="ibqos"}}'
        values: '0 0 1x18 0x10'
    alert_rule_test:
      - eval_time: 8m
        alertname: {alert}
        exp_alerts: []
      - eval_time: 15m
        alertname: {alert}
        exp_alerts:
          - exp_labels: {{severity: warning, instance: "h:9687", job: ibqos}}
            exp_annotations:
              summary: {{summary}}
              description: {{description}}
      - eval_time: 28m
        alertname: {alert}
        exp_alerts: []
"""
)


@pytest.mark.parametrize(
    ("metric", "alert"),
    [("ibqos_opensm_other_config", "IbqosOpenSMOnAnotherConfig"), ("ibqos_opensm_standby", "IbqosOpenSMStandby")],
)
def test_promtool_fires_the_sm_role_alerts_after_the_hold_and_not_once_the_plans_sm_runs_again(config, metric, alert):
    texts = {"summary": (alert, "summary"), "description": (alert, "description")}
    promtool_test(config, f"{metric}.test.yml", SM_ROLE_TEST.format(metric=metric, alert=alert), texts)


ESTIMATE_TEST = """
rule_files: []
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'ibqos_class_share_ratio{class="qos",node="sw",guid="0x20",port="1"}'
        values: '0.6x10'
      - series: 'ibqos_class_share_ratio{class="bulk",node="sw",guid="0x20",port="1"}'
        values: '0.4x10'
      - series: 'ibqos_class_share_seconds{node="sw",guid="0x20",over="window",port="1"}'
        values: '0.05x10'
      - series: 'ibqos_port_bytes_total{node="sw",guid="0x20",port="1"}'
        values: '0+6000000000x10'
      - series: 'ibqos_class_share_ratio{class="qos",node="sw",guid="0x20",port="2"}'
        values: '1x10'
      - series: 'ibqos_class_share_seconds{node="sw",guid="0x20",over="interval",port="2"}'
        values: '10x10'
      - series: 'ibqos_port_bytes_total{node="sw",guid="0x20",port="2"}'
        values: '0+600000000x10'
      - series: 'ibqos_class_share_ratio{class="qos",node="sw",guid="0x21",port="1"}'
        values: '1x10'
      - series: 'ibqos_class_share_seconds{node="sw",guid="0x21",over="interval",port="1"}'
        values: '10x10'
      - series: 'ibqos_port_bytes_total{node="sw",guid="0x21",port="1"}'
        values: '0+600000000x10'
    promql_expr_test:
      - expr: {expr}
        eval_time: 10m
        exp_samples:
          - labels: '{class="qos"}'
            value: 6e7
          - labels: '{class="bulk"}'
            value: 4e7
"""


def test_the_dashboards_class_rate_estimate_is_window_share_times_port_rate(config):
    """Port 1, measured by a window: 60 % / 40 % of 6e9 bytes a minute (1e8 B/s) is 6e7 and
    4e7 B/s. Port 2, measured over whole intervals, is in the measured series, not here; nor is
    port 1 of another switch with the same description (matched by GUID, not description)."""
    panels = json.loads((config / "ibqos-grafana-dashboard.json").read_text())["panels"]
    estimate = next(t["expr"] for p in panels for t in p["targets"] if "estimate" in t.get("legendFormat", ""))
    expr = estimate.replace('node=~"$node"', 'node=~".*"')
    promtool_test(config, "estimate.test.yml", ESTIMATE_TEST.replace("{expr}", json.dumps(expr)), {})


def _port(guid: int, sent: int, desc: str = "MT4123 ConnectX6 Mellanox Technologies") -> LinkLoad:
    """Port 1 of CA `guid`, which sent `sent` bytes, all of class bulk, in a 10 s interval."""
    return LinkLoad(
        desc, guid, 1, "sw1", guid & 0xFF, "xmit", sent / 1.25e10, False,
        [ClassLoad("bulk", sent, 1.0, sent * 8 / 10 / 1e9, 40.0, 0)], {0: sent // 1000}, "interval", 10.0, sent,
    )  # fmt: skip


def _values(c: MonitorCollector) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(registry_for(c)).decode()
    families = text_string_to_metric_families(text)
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}


def test_two_nodes_with_one_description_are_two_series_with_their_own_totals():
    """Unmanaged switches of one model, or HCAs before their host names them, share a node
    description. Keyed by it, the two ports were one label set: every gauge twice (Prometheus
    keeps one, at random), and the counters the sum of both ports' bytes."""
    c = MonitorCollector()
    c.update(Judged(10.0, [_port(0x31, 4000), _port(0x32, 1000)], [], []))
    port_bytes = {dict(k[1])["guid"]: v for k, v in _values(c).items() if k[0] == "ibqos_port_bytes_total"}
    assert port_bytes == {"0x0000000000000031": 4000, "0x0000000000000032": 1000}
    util = [k for k in _values(c) if k[0] == "ibqos_link_utilisation_ratio"]
    assert len(util) == 2 == len(set(util))
    text = generate_latest(registry_for(c)).decode()
    samples = [line.rsplit(" ", 1)[0] for line in text.splitlines() if line and not line.startswith("#")]
    assert len(samples) == len(set(samples)), "a label set exported twice"


def test_a_port_gone_since_the_last_interval_exports_no_series_keeps_no_total_and_starts_again_from_0():
    """A switch-to-switch link down cuts half the fabric off from the SM: those ports are not
    measured. Their counters stayed exported at the last total (rate 0: idle, not gone) for as
    long as the monitor ran; then they vanished but their totals stayed in memory (and --state)
    forever, one more for every port a fabric with churn ever had. Now both go, and a port
    measured again counts from 0 (a counter reset to Prometheus)."""
    c = MonitorCollector()
    c.update(Judged(10.0, [_port(0x31, 4000), _port(0x32, 1000, "ca2")], [], []))
    c.update(Judged(10.0, [_port(0x31, 4000)], [], []))
    gone = {k: v for k, v in _values(c).items() if ("node", "ca2") in k[1]}
    assert gone == {}
    kept = c.totals_json()
    assert [p[0] for p in kept["port_bytes"]] == ["0x0000000000000031"]
    assert {p[0] for p in kept["class_bytes"] + kept["vl_xmit_wait"]} == {"0x0000000000000031"}
    c.update(Judged(10.0, [_port(0x31, 4000), _port(0x32, 500, "ca2")], [], []))
    back = {k[0]: v for k, v in _values(c).items() if ("node", "ca2") in k[1]}
    assert back["ibqos_port_bytes_total"] == 500 and back["ibqos_class_bytes_total"] == 500
    assert back["ibqos_vl_xmit_wait_ticks_total"] == 0


def test_a_class_the_plan_no_longer_has_exports_no_total_and_leaves_the_state():
    """Cron runs from --state across a re-plan that renamed class 'batch' to 'bulk': the old
    class's total was restored, exported on every port, frozen, and kept in --state for good."""
    c = MonitorCollector()
    c.restore(
        {
            "samples": 3,
            "port_bytes": [["0x31", 1, 9000]],
            "class_bytes": [["0x31", 1, "batch", 9000]],
            "vl_xmit_wait": [],
        },
        "state.json",
    )
    c.update(Judged(10.0, [_port(0x31, 4000)], [], []))
    classes = {dict(k[1])["class"]: v for k, v in _values(c).items() if k[0] == "ibqos_class_bytes_total"}
    assert classes == {"bulk": 4000}
    assert c.totals_json()["class_bytes"] == [["0x0000000000000031", 1, "bulk", 4000]]
    assert c.totals_json()["port_bytes"] == [["0x0000000000000031", 1, 13000]]


def test_a_scrape_during_an_update_sees_one_whole_interval(monkeypatch):
    """The HTTP server's thread scrapes while the sampling thread updates. Without a lock an
    update between two series of one scrape (a link that came back adds its ports' totals)
    made the scrape fail, `dictionary changed size during iteration` (Prometheus: the target
    down for that scrape), or mix the new links with the old totals. The update is run in
    another thread at the point a scrape writes its first counter."""
    import threading

    from ibqos.monitor import export

    c = MonitorCollector()
    c.update(Judged(10.0, [_port(0x31, 4000)], [], []))
    later = Judged(10.0, [_port(0x31, 4000), *(_port(0x100 + i, 10) for i in range(50))], [], [])
    updater = threading.Thread(target=c.update, args=(later,))

    class Interleaved(export.CounterMetricFamily):
        def add_metric(self, *args, **kw):
            if updater.ident is None:  # the first counter sample of the scrape
                updater.start()
                updater.join(timeout=0.5)  # with the lock it waits for the scrape, without it runs now
            super().add_metric(*args, **kw)

    monkeypatch.setattr(export, "CounterMetricFamily", Interleaved)
    got = _values(c)
    updater.join(timeout=10)
    assert got[("ibqos_monitor_samples_total", ())] == 1  # the scrape is of the first interval, whole
    assert {dict(k[1])["guid"] for k in got if k[0] == "ibqos_port_bytes_total"} == {"0x0000000000000031"}
    assert _values(c)[("ibqos_monitor_samples_total", ())] == 2


def test_node_descriptions_with_quotes_backslashes_newlines_and_non_ascii_are_escaped():
    """A NodeDescription is any 64 bytes a host sets (the read-back writes them as JSON \\u
    escapes, U+FFFD for bytes no UTF-8): every one is a valid label value, read back as given."""
    descs = ['say "hi"', "C:\\ib\\", "two\nlines", "ünï ☃ \ufffd", '\t{a="b"} # x']
    c = MonitorCollector()
    c.update(Judged(10.0, [_port(0x40 + i, 1000, d) for i, d in enumerate(descs)], [], []))
    text = generate_latest(registry_for(c)).decode()
    promtool = shutil.which("promtool")
    assert promtool is not None, "promtool not found: Debian package prometheus (make deps)"
    cp = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    assert cp.returncode == 0 and cp.stdout + cp.stderr == "", cp.stdout + cp.stderr
    nodes = {dict(k[1])["node"] for k in _values(c) if k[0] == "ibqos_port_bytes_total"}
    assert nodes == set(descs)


RULES_TEST = (
    RULES_HEAD
    + """  - interval: 1m
    input_series:
      - series: 'ibqos_link_utilisation_ratio{node="sw1",guid="0x20",port="3",instance="h:9687",job="ibqos"}'
        values: '0.95x30'
      - series: 'ibqos_link_utilisation_ratio{node="sw1",guid="0x20",port="4",instance="h:9687",job="ibqos"}'
        values: '0.89x30'
      - series: 'ibqos_link_utilisation_ratio{node="sw1",guid="0x20",port="5",instance="h:9687",job="ibqos"}'
        values: '0.95x4 0.5 0.95x25'
      - series: 'ibqos_vl_xmit_wait_ticks_total{node="sw1",guid="0x20",port="3",vl="1",instance="h:9687",job="ibqos"}'
        values: '0+100x30'
      - series: 'ibqos_vl_xmit_wait_ticks_total{node="sw1",guid="0x20",port="3",vl="2",instance="h:9687",job="ibqos"}'
        values: '500x30'
      - series: 'ibqos_monitor_unmeasured_ports{instance="h:9687",job="ibqos"}'
        values: '0x5 2x25'
      - series: 'ibqos_monitor_ambiguous_ports{instance="h:9687",job="ibqos"}'
        values: '0x30'
      # samples every minute (cron --once into a textfile, counters kept in --state), until 20m
      - series: 'ibqos_monitor_samples_total{instance="h:9687",job="ibqos"}'
        values: '1+1x20 21x30'
      - series: 'ibqos_monitor_last_sample_timestamp_seconds{instance="h:9687",job="ibqos"}'
        values: '0+60x20 1200x30'
    alert_rule_test:
      - eval_time: 12m   # port 3 saturated 12 minutes (fires after 10); 4 below; 5 dipped at 5m
        alertname: IbqosLinkSaturated
        exp_alerts:
          - exp_labels: {severity: info, node: sw1, guid: "0x20", port: "3", instance: "h:9687", job: ibqos}
            exp_annotations: {summary: "Link sw1 port 3 saturated"}
      - eval_time: 15m   # VL1 waits on; VL2's old total does not count
        alertname: IbqosVlWaiting
        exp_alerts:
          - exp_labels: {severity: info, node: sw1, guid: "0x20", port: "3", vl: "1", instance: "h:9687", job: ibqos}
            exp_annotations: {summary: "VL 1 waits for credits on sw1 port 3"}
      - eval_time: 14m   # unmeasured since 5m: pending
        alertname: IbqosMonitorBlind
        exp_alerts: []
      - eval_time: 16m
        alertname: IbqosMonitorBlind
        exp_alerts:
          - exp_labels: {severity: warning, instance: "h:9687", job: ibqos}
            exp_annotations: {summary: "ibqos monitor cannot read per-SL counters on some ports"}
      - eval_time: 16m
        alertname: IbqosSharesUnmeasured
        exp_alerts: []
      - eval_time: 19m   # a sample a minute: alive
        alertname: IbqosMonitorDown
        exp_alerts: []
      - eval_time: 40m   # none since 20m: 20 minutes old, down for 9 (more than 10 minutes old)
        alertname: IbqosMonitorDown
        exp_alerts: []
      - eval_time: 45m
        alertname: IbqosMonitorDown
        exp_alerts:
          - exp_labels: {severity: warning, instance: "h:9687", job: ibqos}
            exp_annotations: {summary: "ibqos monitor takes no samples"}
"""
)


def test_promtool_fires_each_alert_for_the_series_that_should_and_not_the_others(config):
    promtool_test(config, "rules.test.yml", RULES_TEST, {})


DOWN_TEST = (
    RULES_HEAD
    + """  - interval: 1m   # scraped every minute; a sample every 30 minutes for 3 hours, then none
    input_series:
      - series: 'ibqos_monitor_samples_total{instance="h:9687",job="ibqos"}'
        values: '{values}'
      - series: 'ibqos_monitor_last_sample_timestamp_seconds{instance="h:9687",job="ibqos"}'
        values: '{stamps}'
    alert_rule_test:
      - eval_time: 25m
        alertname: IbqosMonitorDown
        exp_alerts: []
      - eval_time: 175m
        alertname: IbqosMonitorDown
        exp_alerts: []
      - eval_time: 275m   # none since 180m: 95 minutes old, down (over 90) for 5, not 10
        alertname: IbqosMonitorDown
        exp_alerts: []
      - eval_time: 300m
        alertname: IbqosMonitorDown
        exp_alerts:
          - exp_labels: {severity: warning, instance: "h:9687", job: ibqos}
            exp_annotations: {summary: "ibqos monitor takes no samples"}
"""
)


def test_a_monitor_sampling_every_30_minutes_is_not_down(ibqos_cli, tmp_path):
    """`--write-config --interval 1800` (or cron every 30 minutes): the rule asked for a sample
    in every 10 minutes, so IbqosMonitorDown fired 20 minutes of every 30 for a monitor working
    as configured (and, counted by increase(), in its first interval after any start). It is
    down when its last sample is older than three intervals (at least 10 minutes)."""
    cp = subprocess.run(
        [*ibqos_cli.argv, "monitor", "--write-config", str(tmp_path), "--interval", "1800"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert cp.returncode == 0, cp.stderr
    values = " ".join(str(1 + min(m, 180) // 30) for m in range(320))
    stamps = " ".join(str(60 * 30 * (min(m, 180) // 30)) for m in range(320))
    promtool_test(tmp_path, "down.test.yml", DOWN_TEST.replace("{values}", values).replace("{stamps}", stamps), {})


FAILING_TEST = (
    RULES_HEAD
    + """  - interval: 1m   # the fabric does not answer from 5m to 24m; the monitor serves on
    input_series:
      - series: 'ibqos_monitor_last_sample_success{instance="h:9687",job="ibqos"}'
        values: '1x4 0x19 1x10'
    alert_rule_test:
      - eval_time: 14m   # failing for 9 minutes: pending
        alertname: IbqosMonitorSampleFailing
        exp_alerts: []
      - eval_time: 16m
        alertname: IbqosMonitorSampleFailing
        exp_alerts:
          - exp_labels: {severity: warning, instance: "h:9687", job: ibqos}
            exp_annotations: {summary: {summary}, description: {description}}
      - eval_time: 26m   # sampling again
        alertname: IbqosMonitorSampleFailing
        exp_alerts: []
"""
)


def test_samples_failing_for_the_hold_fire_their_alert_and_recovery_clears_it(config):
    texts = {k: ("IbqosMonitorSampleFailing", k) for k in ("summary", "description")}
    promtool_test(config, "failing.test.yml", FAILING_TEST, texts)


def test_a_failed_sample_drops_every_per_port_series_and_keeps_the_monitors_own():
    """monitor.outage: after a failed sample no port was measured, so none of the last
    interval's shares, utilisation, violations or totals is exported as if now; the totals come
    back with the next interval, not from 0."""
    c = MonitorCollector()
    c.update(judged_interval(), "dla")
    before = samples(generate_latest(registry_for(c)).decode())
    assert "ibqos_port_bytes_total" in before and "ibqos_class_share_ratio" in before
    c.failed(None)
    c.failed(None)
    text = generate_latest(registry_for(c)).decode()
    kept = set(samples(text))
    assert kept == {
        "ibqos_monitor_samples_total",
        "ibqos_monitor_last_sample_timestamp_seconds",
        "ibqos_monitor_last_sample_success",
        "ibqos_monitor_sample_failures_total",
        "ibqos_routing_engine_info",
        "ibqos_credit_loop_verdict_unreadable",
    }, kept
    assert "ibqos_monitor_last_sample_success 0.0" in text and "ibqos_monitor_sample_failures_total 2.0" in text
    c.update(judged_interval(), "dla")
    text = generate_latest(registry_for(c)).decode()
    assert "ibqos_monitor_last_sample_success 1.0" in text and "ibqos_monitor_samples_total 2.0" in text
