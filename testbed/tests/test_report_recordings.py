"""`ibqos testbed report` on recordings the run did not make itself: flows missing, doubled,
failed, cut short, in other perftest formats; and the verdict's edges (exit 0 delivered, 1 not
delivered, 2 unusable input, always one line)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from ibqos.errors import InputError
from ibqos_testbed.compare import build_report
from ibqos_testbed.diagnose import explain
from testbed_helpers import FIXTURES, fixture_text

GOOD = FIXTURES / "results_configA"
PLAN = FIXTURES / "plan_configA.json"
ROW = re.compile(r"^( 65536\s+\d+\s+\S+\s+)(\S+)(\s+)(\S+)$", re.M)  # -s 65536's row: BW average, MsgRate


@pytest.fixture
def res(tmp_path) -> Path:
    r = tmp_path / "res"
    shutil.copytree(GOOD, r)
    return r


def _doc(res: Path) -> dict:
    return json.loads((res / "results.json").read_text())


def _save(res: Path, doc: dict) -> None:
    (res / "results.json").write_text(json.dumps(doc, indent=2))


def _bw_flow(doc: dict, sl: int) -> dict:
    return next(f for f in doc["flows"] if f["phase"] == "bw" and f["sl"] == sl)


def _set_bw(res: Path, sl: int, value: str) -> None:
    """SL's bandwidth flow measured `value` (MB/sec) on both sides, and the message rate that
    goes with it (perftest prints both from one count: MB/sec x 2^20 = Mpps x 10^6 x 65536)."""
    rate = f"{float(value) * 2**20 / 65536 / 1e6:.6f}"
    for role in ("server", "client"):
        p = res / "bw" / f"bw-sl{sl}.{role}.out"
        text, n = ROW.subn(lambda m: m.group(1) + value.ljust(len(m.group(2))) + m.group(3) + rate, p.read_text())
        assert n == 1
        p.write_text(text)


def _both_sides(res: Path, flow: str, edit) -> None:
    """Both recorded outputs of bandwidth flow `flow` replaced by edit(their text)."""
    for role in ("server", "client"):
        p = res / "bw" / f"{flow}.{role}.out"
        p.write_text(edit(p.read_text()))


def _report(ibqos_cli, res: Path, *args):
    r = ibqos_cli("testbed", "report", res, *args)
    err = r.stderr.strip().splitlines()
    assert "Traceback" not in r.stderr and all(ln.startswith(("ibqos: error: ", "note: ")) for ln in err), r.stderr
    assert len([ln for ln in err if ln.startswith("ibqos: error: ")]) <= 1, r.stderr
    return r.returncode, err[-1] if err else ""


def test_a_missing_flow_is_unusable_input(ibqos_cli, res):
    """Before: exit 1, 'FAIL: SL 2 (bulk): no bandwidth measurement' (or, for a latency flow, exit 0)."""
    doc = _doc(res)
    doc["flows"] = [f for f in doc["flows"] if not (f["phase"] == "bw" and f["sl"] == 2)]
    _save(res, doc)
    rc, err = _report(ibqos_cli, res)
    assert rc == 2
    assert (
        err == f"ibqos: error: {res}/results.json: flows: no recording of flow bw-sl2 (phase bw, SL 2); "
        "1 of the run plan's 24 flows missing"
    )
    doc["flows"] = [f for f in _doc(GOOD)["flows"] if f["phase"] != "lat-idle-sl1"]
    _save(res, doc)
    assert _report(ibqos_cli, res)[0] == 2


def test_two_recordings_for_one_sl_are_unusable_input(ibqos_cli, res):
    """Before: exit 0, the later recording silently taken (or the extra one ignored)."""
    doc = _doc(res)
    doc["flows"].append(json.loads(json.dumps(_bw_flow(doc, 2))))
    _save(res, doc)
    line = (res / "results.json").read_text().splitlines().index("    {", 0) + 1  # first flow's object
    starts = [n for n, ln in enumerate((res / "results.json").read_text().splitlines(), 1) if ln == "    {"]
    assert starts[0] == line and len(starts) == 25
    rc, err = _report(ibqos_cli, res)
    assert rc == 2
    assert err == (
        f"ibqos: error: {res}/results.json:{starts[24]}: flows[24]: "
        "flow bw-sl2 (phase bw, SL 2) is recorded twice: which run to judge is unknown"
    )
    doc["flows"][24]["id"] = "bw-sl2-again"
    _save(res, doc)
    rc, err = _report(ibqos_cli, res)
    assert rc == 2 and err.endswith("flows[24]: flow bw-sl2-again (phase bw, SL 2) is not in the run plan")
    doc = _doc(GOOD)
    _bw_flow(doc, 2)["sl"] = 5
    _save(res, doc)
    rc, err = _report(ibqos_cli, res)
    assert rc == 2 and err.endswith("flows[2]: flow bw-sl2 is bw on SL 5; the run plan has bw on SL 2")


def test_a_failed_run_is_unusable_input_named_where_perftest_said_it(ibqos_cli, res):
    """The client found no server (perftest_communication.c's words, as a real run records them).
    Before: exit 1, 'FAIL: SL 3 (scavenger): no bandwidth measurement: ...'."""
    said = fixture_text("send_bw_4.5_client_connect_failed.txt")
    (res / "bw" / "bw-sl3.client.out").write_text("")
    (res / "bw" / "bw-sl3.client.err").write_text(said)
    (res / "bw" / "bw-sl3.server.out").write_text(fixture_text("send_bw_4.5_server_MB.txt").split(" #bytes")[0])
    doc = _doc(res)
    client = _bw_flow(doc, 3)["client"]
    client["returncode"] = 1
    client["error"] = explain(tool="ib_send_bw", host="node2", returncode=1, stderr=said)
    _save(res, doc)
    rc, err = _report(ibqos_cli, res)
    assert rc == 2
    assert (
        err == f"ibqos: error: {res}/bw/bw-sl3.client.err:1: bw-sl3: "
        "ib_send_bw on node2 could not reach its server at node1:18518"
    )


@pytest.mark.parametrize(
    "cut, says",
    [
        (lambda t: "", r"bw-sl1.server.out: bw-sl1: empty output: perftest printed nothing"),
        (lambda t: t[: ROW.search(t).end(2) - 3], r"bw-sl1.server.out:24: bw-sl1: garbled result row"),
        (lambda t: t[: t.rstrip().rindex("\n") + 1], r"bw-sl1.server.out:24: bw-sl1: truncated output: .* never ends"),
        (lambda t: fixture_text("send_bw_4.5_server_modify_qp_failed.txt"), r":23: bw-sl1: perftest failed, no result"),
    ],
)
def test_cut_short_or_failed_output_is_unusable_input(ibqos_cli, res, cut, says):
    """Killed, empty or failed on both sides. Before: exit 1 and 'FAIL: SL 1 ... no bandwidth measurement'."""
    _both_sides(res, "bw-sl1", cut)
    rc, err = _report(ibqos_cli, res)
    assert rc == 2 and err.startswith("ibqos: error: ") and re.search(says, err), err


def test_the_receivers_output_first_else_the_senders_with_a_note(ibqos_cli, res):
    (res / "bw" / "bw-sl1.server.out").write_text("")
    rc, err = _report(ibqos_cli, res)
    assert rc == 0
    assert err == (
        f"note: bw-sl1: the server's output is unusable ({res}/bw/bw-sl1.server.out: empty output: "
        "perftest printed nothing); the client's is used"
    )
    (sl1,) = [s for s in json.loads(ibqos_cli("testbed", "report", res, "--json").stdout)["per_sl"] if s["sl"] == 1]
    assert sl1["problems"] == [err.removeprefix("note: ")]


def test_a_latency_table_in_a_bandwidth_flow(ibqos_cli, res):
    """Before: internal error (IndexError), exit 70."""
    lat = (res / "lat-idle-sl2" / "lat-idle-sl2.client.out").read_text()
    _both_sides(res, "bw-sl2", lambda _: lat)
    rc, err = _report(ibqos_cli, res)
    assert rc == 2
    assert err.endswith(
        "bw-sl2.server.out:18: bw-sl2: a latency result (ib_send_lat's), not a bandwidth result (ib_send_bw's)"
    )


def test_a_bandwidth_no_link_carries_is_refused(ibqos_cli, res):
    """15000 MB/sec (its MsgRate agrees) is 125.8 Gb/s: no EDR link carries it. Before: judged (exit 1)."""
    _set_bw(res, 0, "15000.00")
    rc, err = _report(ibqos_cli, res)
    assert rc == 2
    assert err == (
        f"ibqos: error: {res}/bw/bw-sl0.server.out:24: bw-sl0: 15000 MB/sec is 125.8 Gb/s, more than "
        "the EDR link carries (100 Gb/s): not this link's measurement, or not in MB/sec"
    )


@pytest.mark.parametrize(("rate", "says"), [(0, "must be positive, got 0.0"), (-100, "must be positive, got -100")])
def test_a_run_plan_link_rate_of_0_or_below_is_refused_not_read_as_no_check(ibqos_cli, res, rate, says):
    """results.json's run plan with `rate_gbps` 0 (hand-edited, another tool's): 0 turned the
    check above off, and 15000 MB/sec (125.8 Gb/s on an EDR link) was judged, exit 1; -100
    refused every bandwidth as 'more than the EDR link carries (-100 Gb/s)'. A rate is read as
    every ibqos input reads one: one line naming the field, exit 2. Null still means no rate."""
    _set_bw(res, 0, "15000.00")
    doc = _doc(res)
    doc["runplan"]["rate_gbps"] = rate
    _save(res, doc)
    rc, err = _report(ibqos_cli, res)
    assert rc == 2 and err.startswith(f"ibqos: error: {res}/results.json:"), err
    assert f"runplan.rate_gbps: link rate {says}" in err and err.count("\n") == 0, err
    doc["runplan"]["rate_gbps"] = None
    _save(res, doc)
    rc, err = _report(ibqos_cli, res)
    assert rc == 1 and "more than" not in err, err  # no rate: judged, and SL 0's share is off


def test_numbers_in_another_unit_are_unusable_input(ibqos_cli, res):
    """MB/sec numbers under a Gb/sec header: 5205 'Gb/s'. Before: exit 1, judged."""
    _both_sides(res, "bw-sl0", lambda t: t.replace("[MB/sec]", "[Gb/sec]"))
    rc, err = _report(ibqos_cli, res)
    assert rc == 2
    assert err == (
        f"ibqos: error: {res}/bw/bw-sl0.server.out:24: bw-sl0: BW average 5205.24 Gb/sec is not "
        "MsgRate 0.083284 Mpps x 65536 bytes (43.66 Gb/sec): a number in another unit, or edited"
    )


def _rows_around(path: Path, size_row: re.Pattern, before: str, after: str) -> None:
    text = path.read_text()
    m = size_row.search(text)
    assert m
    path.write_text(text[: m.start()] + before + text[m.start() : m.end()] + "\n" + after + text[m.end() + 1 :])


def test_all_sizes_recordings_are_judged_at_the_plans_sizes(ibqos_cli, res):
    """-a: a row per size around the run's. Before: the last row, 8 MiB, was judged (the
    shares of the 8 MiB rows below fail configuration A, 25 % each)."""
    for p in res.rglob("*.out"):
        if "#bytes     #iterations" in p.read_text():
            big = " 8388608    1000             0.00               11700.00\t\t   0.001463"
            _rows_around(
                p,
                re.compile(r"^ 65536 .*$", re.M),
                " 2          1000             0.00               9.28\t\t   4.865000\n",
                big + "\n",
            )
        else:
            big = (
                " 8388608 1000          1300.02        1400.31      1310.07  "
                "\t       1320.09     \t3.05\t\t1390.38 \t\t1400.31\n"
            )
            _rows_around(p, re.compile(r"^ 2 .*$", re.M), "", big)
    rc, _ = _report(ibqos_cli, res, "--json")
    r = ibqos_cli("testbed", "report", res, "--json")
    assert rc == 0, r.stderr
    got, want = json.loads(r.stdout), json.loads(ibqos_cli("testbed", "report", GOOD, "--json").stdout)
    assert got["per_class"] == want["per_class"] and got["per_sl"] == want["per_sl"]


def test_a_run_below_the_plans_mtu_is_not_delivered(ibqos_cli, res):
    """perftest said 'Requested mtu is higher than active mtu' and ran at 2048: the fabric does not
    run the plan's MTU. Before: exit 0."""
    p = res / "bw" / "bw-sl2.server.out"
    p.write_text(
        "Requested mtu is higher than active mtu \nChanging to active mtu - 4\n"
        + p.read_text().replace("4096[B]", "2048[B]")
    )
    rc, err = _report(ibqos_cli, res)
    assert rc == 1
    assert err == (
        "ibqos: error: FAIL: perftest ran at MTU 2048, the plan's is 4096 (bw-sl2): "
        "a port's active MTU is below the plan's (ibqos status)"
    )


def test_crlf_recordings_give_the_same_report(ibqos_cli, res):
    for p in res.rglob("*.out"):
        p.write_bytes(p.read_bytes().replace(b"\n", b"\r\n"))
    got = json.loads(ibqos_cli("testbed", "report", res, "--json").stdout)
    want = json.loads(ibqos_cli("testbed", "report", GOOD, "--json").stdout)
    assert got["per_class"] == want["per_class"] and got["per_sl"] == want["per_sl"]
    assert got["per_sl"][0]["lat_idle_us"]["mtu"] == 4096 and "line" not in got["per_sl"][0]["lat_idle_us"]


def _shares_plan(make_plan, shares: dict[str, float]) -> Path:
    def edit(doc):
        for name, share in shares.items():
            doc["analysis"]["terminal"]["per_class"][name]["share"] = share

    return make_plan(edit)


def test_a_share_at_the_tolerance_passes_and_one_beyond_fails(res, make_plan):
    """4571/2736/1835/858 MB/s: shares 45.71/27.36/18.35/8.58 % of the total. Storage predicted
    25.36 is +2.00 pp off, at the 2 pp tolerance: it passes (before it failed as
    '+2.00 pp, tolerance 2 pp': float subtraction gives 2.000000000000007)."""
    for sl, v in enumerate(("4571.00", "2736.00", "1835.00", "858.00")):
        _set_bw(res, sl, v)
    plan = _shares_plan(make_plan, {"latency": 45.71, "storage": 25.36, "bulk": 18.35, "scavenger": 8.58})
    rep = build_report(res, prediction=plan, tolerance=2.0)
    assert [round(c.measured, 2) for c in rep.classes] == [45.71, 27.36, 18.35, 8.58]
    assert rep.passed, rep.failures
    plan = _shares_plan(make_plan, {"latency": 45.71, "storage": 25.36, "bulk": 18.35, "scavenger": 10.59})
    rep = build_report(res, prediction=plan, tolerance=2.0)
    assert rep.failures == ["SL 3 (scavenger): measured 8.58 % vs predicted 10.59 % (-2.01 pp, tolerance 2 pp)"]


def test_a_saturating_class_and_classes_at_zero(ibqos_cli, res, make_plan):
    """A plan that gives one class the whole link: its flow measures it all, the others 0.00."""
    _set_bw(res, 0, "11200.00")
    for sl in (1, 2, 3):
        _set_bw(res, sl, "0.00")
    plan = _shares_plan(make_plan, {"latency": 100.0, "storage": 0.0, "bulk": 0.0, "scavenger": 0.0})
    rc, err = _report(ibqos_cli, res, "--prediction", plan)
    assert (rc, err) == (0, "")
    _set_bw(res, 3, "600.00")  # the 0 % class got 5.08 % of the link
    rc, err = _report(ibqos_cli, res, "--prediction", plan)
    assert rc == 1
    assert err == (
        "ibqos: error: FAIL: SL 0 (latency): measured 94.92 % vs predicted 100.00 % (-5.08 pp, tolerance 2 pp); "
        "SL 3 (scavenger): measured 5.08 % vs predicted 0.00 % (+5.08 pp, tolerance 2 pp)"
    )


def test_nothing_moved_is_not_delivered(ibqos_cli, res):
    """Every flow measured 0.00: no share exists. Before: exit 0, 'measured only'."""
    for sl in range(4):
        _set_bw(res, sl, "0.00")
    rc, err = _report(ibqos_cli, res)
    assert rc == 1
    assert (
        err == "ibqos: error: FAIL: no SL moved any data: every bandwidth flow measured 0 "
        "(is the plan applied? ibqos status)"
    )


def test_build_report_raises_input_error_for_an_unusable_flow(res):
    (res / "bw" / "bw-sl3.server.out").write_text(
        " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
    )
    (res / "bw" / "bw-sl3.client.out").write_text("")
    with pytest.raises(InputError, match=r"bw-sl3.server.out:1: bw-sl3: truncated output"):
        build_report(res)
