"""The perftest parser on every header variant, both --out_json dialects, and broken output."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ibqos.errors import InputError
from ibqos_testbed.perftest_output import Bandwidth, Latency, parse_file, parse_json, parse_text
from testbed_helpers import FIXTURES, fixture_text

# name -> (unit, BW average printed in the fixture's result row)
BW_TEXT = {
    "send_bw_4.5_server_MB.txt": ("MB/sec", 5209.31),
    "send_bw_4.5_client_MB_cpufreq.txt": ("MB/sec", 5211.87),
    "send_bw_4.5_server_Gb.txt": ("Gb/sec", 43.70),
    "send_bw_25.10_server_MiB.txt": ("MiB/sec", 5209.31),
    "send_bw_25.10_client_Gb.txt": ("Gb/sec", 43.72),
    "send_bw_25.10_server_rdma_cm.txt": ("MiB/sec", 5209.31),  # -R: GID lines, rdma_cm's own wait message
}
LAT_TEXT = {
    "send_lat_4.5_client.txt": (1.09, 1.38, 7.31),
    "send_lat_25.10_server_cpufreq.txt": (2.73, 6.12, 21.64),
}


@pytest.mark.parametrize("name", BW_TEXT)
def test_bandwidth_header_variants(name):
    unit, avg = BW_TEXT[name]
    r = parse_text(fixture_text(name))
    assert isinstance(r, Bandwidth)
    assert (r.unit, r.bw_average, r.msg_size) == (unit, avg, 65536)
    assert r.iterations > 800_000 and r.bw_peak == 0.0  # -D runs report no peak


def test_units_agree_in_gbps():
    """MB/sec and MiB/sec are the same 2^20-byte unit; --report_gbits is 10^9 bit/s."""
    mb = parse_text(fixture_text("send_bw_4.5_server_MB.txt"))
    mib = parse_text(fixture_text("send_bw_25.10_server_MiB.txt"))
    gb = parse_text(fixture_text("send_bw_4.5_server_Gb.txt"))
    assert mb.gbps == mib.gbps == pytest.approx(5209.31 * 2**20 * 8 / 1e9)
    assert gb.gbps == pytest.approx(mb.gbps, abs=0.005)


@pytest.mark.parametrize("name", LAT_TEXT)
def test_latency_table(name):
    avg, p99, p999 = LAT_TEXT[name]
    r = parse_text(fixture_text(name))
    assert isinstance(r, Latency)
    assert (r.t_avg, r.p99, r.p99_9, r.msg_size, r.iterations) == (avg, p99, p999, 2, 10000)
    assert r.t_min <= r.t_typical <= r.t_max


@pytest.mark.parametrize(
    "json_name,text_name",
    [
        ("send_bw_4.5_out.json", "send_bw_4.5_server_MB.txt"),
        ("send_bw_25.10_out.json", "send_bw_25.10_server_MiB.txt"),
        ("send_lat_4.5_out.json", "send_lat_4.5_client.txt"),
        ("send_lat_25.10_out.json", "send_lat_4.5_client.txt"),
    ],
)
def test_out_json_matches_the_table(json_name, text_name):
    """4.5 writes `key: value,` (not JSON); 24.07+ writes JSON. Both say what the table says."""
    from_json = parse_json(fixture_text(json_name))
    from_text = parse_text(fixture_text(text_name))
    if isinstance(from_text, Bandwidth):
        assert from_json.bw_average == from_text.bw_average
        assert from_json.iterations == from_text.iterations
    else:
        assert from_json == from_text


def test_parse_file_recognises_json_and_text(tmp_path):
    json_out, text_out = tmp_path / "send_bw_25.10_out.json", tmp_path / "send_bw_4.5_server_MB.txt"
    for path in (json_out, text_out):
        path.write_text(fixture_text(path.name))
        r = parse_file(path)
        assert isinstance(r, Bandwidth) and (r.bw_average, r.unit) == (5209.31, "MB/sec")
        # 5209.31 MB/sec (2^20 bytes) is the 43.70 Gb/sec perftest itself prints for the same
        # link with --report_gbits (send_bw_4.5_server_Gb.txt)
        assert r.gbps == pytest.approx(43.70, abs=0.005)
    # json_unit says how to read the JSON's bare numbers (what the run printed); a text capture
    # names its unit in its header, and json_unit does not change it
    assert parse_file(text_out, json_unit="Gb/sec").gbps == pytest.approx(43.70, abs=0.005)
    # MB/sec numbers read as Gb/sec disagree with the file's own MsgRate (was: 5209.31 Gb/s)
    with pytest.raises(InputError, match=r"results.BW_average: BW average 5209.31 Gb/sec is not MsgRate 0.083349"):
        parse_file(json_out, json_unit="Gb/sec")


def test_noise_inside_the_table_is_skipped():
    text = fixture_text("send_bw_4.5_server_MB.txt")
    header = next(ln for ln in text.splitlines() if "#bytes" in ln)
    noisy = text.replace(
        header,
        header + "\nConflicting CPU frequency values detected: 1000.000000 != 3000.000000. CPU Frequency is not max.",
    )
    assert parse_text(noisy) == parse_text(text)


def _lines(name):
    return fixture_text(name).splitlines(True)


@pytest.mark.parametrize(
    "text,message",
    [
        ("", "empty output"),
        ("   \n\n", "empty output"),
        (" Did not detect devices \n If device exists, check if driver is up\n", ":1: perftest failed, no result"),
        ("5209.310000\n", "no perftest result table"),  # --output=bandwidth prints the bare number
    ],
)
def test_empty_or_tableless_output(text, message):
    with pytest.raises(InputError, match=message):
        parse_text(text, source="out.txt")


def test_truncated_after_header():
    lines = _lines("send_bw_4.5_server_MB.txt")
    cut = next(i for i, ln in enumerate(lines) if "#bytes" in ln) + 1
    with pytest.raises(InputError, match=r"out.txt:\d+: truncated output.*no result row"):
        parse_text("".join(lines[:cut]), source="out.txt")


def test_truncated_inside_row():
    text = fixture_text("send_lat_4.5_client.txt")
    cut = text.index("1.09")  # the row stops after t_typical
    with pytest.raises(InputError, match="garbled result row: expected 9 numbers"):
        parse_text(text[:cut], source="out.txt")


def test_truncated_before_end_of_table():
    lines = _lines("send_bw_25.10_server_MiB.txt")
    with pytest.raises(InputError, match=r"truncated output: .* never ends"):
        parse_text("".join(lines[:-1]), source="out.txt")


def test_garbled_row_names_line():
    lines = _lines("send_bw_4.5_server_MB.txt")
    i = next(i for i, ln in enumerate(lines) if ln.startswith(" 65536"))
    lines[i] = lines[i].replace("5209.31", "52#9.31")
    with pytest.raises(InputError, match=rf"^out.txt:{i + 1}: garbled result row"):
        parse_text("".join(lines), source="out.txt")


def test_unknown_and_duration_latency_headers():
    dur = (
        " #bytes        #iterations       t_avg[usec]    tps average\n"
        " 2       1234567            1.09        458012.34\n" + "-" * 87 + "\n"
    )
    with pytest.raises(InputError, match=r"duration run \(-D\).*-n ITERATIONS"):
        parse_text(dur)
    with pytest.raises(InputError, match="unknown perftest result table header"):
        parse_text(" #bytes  frobs[zz]\n 1 2\n" + "-" * 87 + "\n")


@pytest.mark.parametrize("name", ["send_bw_4.5_out.json", "send_bw_25.10_out.json"])
def test_truncated_json(name):
    text = fixture_text(name)
    with pytest.raises(InputError, match=r"truncated|garbled|no results"):
        parse_json(text[: text.index("BW_average")], source="f.json")


def test_garbled_json():
    text = fixture_text("send_bw_25.10_out.json").replace('"BW_average": ', '"BW_average" ')
    with pytest.raises(InputError, match=r"^f.json:\d+: garbled --out_json"):
        parse_json(text, source="f.json")
    with pytest.raises(InputError, match="empty"):
        parse_json("", source="f.json")
    with pytest.raises(InputError, match="not a number"):
        parse_json(fixture_text("send_bw_4.5_out.json").replace("5209.31", "fast"))


ALL_TEXT = sorted(BW_TEXT) + sorted(LAT_TEXT)


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(ALL_TEXT), frac=st.floats(0, 1))
def test_any_prefix_gives_the_full_result_or_a_clear_error(name, frac):
    """Output cut anywhere never yields a different number, and never a traceback."""
    text = fixture_text(name)
    full = parse_text(text)
    prefix = text[: int(len(text) * frac)]
    try:
        got = parse_text(prefix, source="cut.txt")
    except InputError as e:
        assert str(e).startswith("cut.txt") and "\n" not in str(e)
    else:
        assert got == full


def test_fixtures_note_their_source_format():
    for path in (FIXTURES / "perftest").iterdir():
        notes = [ln for ln in path.read_text().splitlines() if ln.startswith("#: ")]
        assert notes and "perftest" in notes[0], path.name


# Other versions and options, each fixture hand-written from what that perftest prints (its
# '#: ' notes cite the format strings); the result is the row of the run's message size.


def test_all_sizes_run_gives_the_row_of_the_runs_size():
    """-a prints a row per size 2..2^23; the run's -s names the one to compare. Before, the last
    row (8 MiB) was taken, for latency too, whatever size the run plan asked for."""
    bw = fixture_text("send_bw_4.5_client_all_sizes.txt")
    r = parse_text(bw, size=65536)
    assert (r.msg_size, r.bw_average, r.iterations) == (65536, 5209.31, 833489)
    with pytest.raises(InputError, match=r"^a.txt:\d+: result rows of 23 message sizes \(2\.\.8388608 bytes, -a\)"):
        parse_text(bw, source="a.txt")
    with pytest.raises(InputError, match=r"no result row of message size 65537 .* rows of 2, 4, 8, "):
        parse_text(bw, size=65537)
    lat = parse_text(fixture_text("send_lat_4.5_client_all_sizes.txt"), size=2)
    assert (lat.msg_size, lat.t_avg, lat.p99) == (2, 1.10, 1.39)


def test_run_infinitely_capture_is_refused_as_such():
    """--run_infinitely prints a row per period and never the closing line; it was called
    truncated output, which it is not."""
    text = fixture_text("send_bw_4.5_server_run_infinitely.txt")
    with pytest.raises(
        InputError, match=r"^i.txt:\d+: 3 result rows of one message size and no end: a --run_infinitely"
    ):
        parse_text(text, source="i.txt", size=65536)


def test_bidirectional_run_is_refused():
    """-b: both directions' sum (the title says so); it had been taken as one direction's
    bandwidth, up to twice the link."""
    text = fixture_text("send_bw_4.5_client_bidirectional.txt")
    with pytest.raises(InputError, match=r"^b.txt:2: a bidirectional run \('Send Bidirectional BW Test', -b\)"):
        parse_text(text, source="b.txt")
    doc = fixture_text("send_bw_25.10_out.json").replace('"Send_BW_Test"', '"Send_Bidirectional_BW_Test"')
    with pytest.raises(InputError, match=r"test_info.test: a bidirectional run"):
        parse_json(doc)


def test_cpu_util_column_and_histogram_lines():
    r = parse_text(fixture_text("send_bw_24.07_server_cpu_util.txt"))
    assert (r.unit, r.bw_average, r.msg_size) == ("MiB/sec", 5209.31, 65536)
    lat = parse_text(fixture_text("send_lat_4.5_client_histogram.txt"))  # -H: samples, header again, row
    assert (lat.iterations, lat.t_avg, lat.p99_9) == (10, 1.10, 1.38)


def test_the_mtu_perftest_ran_with_is_kept():
    """When the port's active MTU is below -m, perftest says so and runs at the active one."""
    assert parse_text(fixture_text("send_bw_4.5_client_mtu_fallback.txt")).mtu == 2048
    assert parse_text(fixture_text("send_bw_4.5_server_MB.txt")).mtu == 4096
    assert parse_json(fixture_text("send_bw_25.10_out.json")).mtu == 4096
    assert parse_json(fixture_text("send_lat_4.5_out.json")).mtu == 4096


@pytest.mark.parametrize(
    "name, line, said",
    [
        ("send_bw_4.5_client_connect_failed.txt", 1, "Couldn't connect to node1:18518"),
        ("send_bw_4.5_server_modify_qp_failed.txt", 23, "Failed to modify QP 275 to RTR"),
    ],
)
def test_a_failed_run_says_where_perftest_gave_up(name, line, said):
    with pytest.raises(InputError) as e:
        parse_text(fixture_text(name), source="f.txt")
    assert str(e.value) == f"f.txt:{line}: perftest failed, no result: {said!r}"


@pytest.mark.parametrize(
    "old, new, says",
    [
        ("5209.31", "-5209.31", "negative number"),
        (" 833489 ", " 833489.5 ", "#bytes and #iterations must be whole numbers"),
        (" 65536 ", " 6.5536e4 ", "#bytes and #iterations must be whole numbers"),
    ],
)
def test_numbers_perftest_cannot_print_are_refused(old, new, says):
    text = fixture_text("send_bw_4.5_server_MB.txt")
    assert old in text
    with pytest.raises(InputError, match=rf"^f.txt:24: {says}"):
        parse_text(text.replace(old, new), source="f.txt")


def test_crlf_line_ends_parse_alike():
    for name in ALL_TEXT:
        text = fixture_text(name)
        assert parse_text(text.replace("\n", "\r\n")) == parse_text(text)


def test_kind_and_size_of_an_out_json_file():
    with pytest.raises(InputError, match=r"a latency result \(ib_send_lat's\), not a bandwidth result"):
        parse_json(fixture_text("send_lat_25.10_out.json"), kind="bw")
    with pytest.raises(InputError, match=r"results.MsgSize: MsgSize 65536, not the run's -s 4096"):
        parse_json(fixture_text("send_bw_4.5_out.json"), size=4096)
    with pytest.raises(InputError, match=r":23: a bandwidth result \(ib_send_bw's\), not a latency result"):
        parse_text(fixture_text("send_bw_4.5_server_MB.txt"), source="f.txt", kind="lat")


DEBIAN_TOOLS = [Path("/usr/bin/ib_send_bw"), Path("/usr/bin/ib_send_lat")]


@pytest.mark.skipif(not all(p.exists() for p in DEBIAN_TOOLS), reason="Debian's perftest is not installed")
def test_every_result_header_of_the_installed_perftest():
    """Debian 12's perftest (4.5+0.17; `ib_send_bw --version` says 6.06) carries its table
    headers as strings: each one, under a row of as many numbers as it has columns, parses
    or is refused for its reason, never misread."""
    headers = set()
    for tool in DEBIAN_TOOLS:
        headers |= {h.decode() for h in re.findall(rb" #bytes [ -~\t]+", tool.read_bytes())}
    assert len(headers) >= 6, headers
    refused = {"#sl": "raw Ethernet QoS", "tps average": "duration run"}
    for header in headers:
        n = header.count("[") + header.count("#") + ("tps average" in header)  # a column: '#name' or 'name[unit]'
        # 1.5 MB/sec (2^20 B) of 65536-byte messages is 24 messages/s; 1.5 Gb/sec is 2861.02
        rate = "0.002861" if "Gb/sec" in header else "0.000024"
        row = " ".join(["65536", "1000"] + [rate if c.startswith("MsgRate") else "1.5" for c in _columns(header)[2:n]])
        text = f"{header}\n {row}\n" + "-" * 87 + "\n"
        why = next((w for k, w in refused.items() if k in header), None)
        if why:
            with pytest.raises(InputError, match=why):
                parse_text(text)
            continue
        r = parse_text(text)
        assert (r.msg_size, r.iterations) == (65536, 1000), header
        assert (r.bw_average if isinstance(r, Bandwidth) else r.t_avg) == 1.5, header


def _columns(header: str) -> list[str]:
    """A header's column names, split where perftest puts 3 or more spaces between them."""
    return re.split(r"\s{3,}|(?<=\]) +|(?<=#bytes) +|(?<=#iterations) +", header.strip())


def test_numbers_in_another_unit_than_the_header_are_refused():
    """MB/sec numbers under a Gb/sec header (or the reverse) contradict the row's own MsgRate:
    perftest prints BW average x unit = MsgRate x 10^6 x #bytes. Before: 5209.31 Gb/s."""
    mb = fixture_text("send_bw_4.5_server_MB.txt")
    with pytest.raises(
        InputError,
        match=r"^f.txt:24: BW average 5209.31 Gb/sec is not MsgRate 0.083349 Mpps x 65536 bytes \(43.70 Gb/sec\)",
    ):
        parse_text(mb.replace("[MB/sec]", "[Gb/sec]"), source="f.txt")
    gb = fixture_text("send_bw_4.5_server_Gb.txt")
    with pytest.raises(InputError, match=r"BW average 43.7 MB/sec is not .* \(5209.\d\d MB/sec\)"):
        parse_text(gb.replace("[Gb/sec]", "[MB/sec]"), source="f.txt")


def test_latencies_out_of_perftest_order_are_refused():
    """t_min, median, 99 %, 99.9 % and t_max come from one sorted array, t_avg is between the
    ends: a row out of that order (columns swapped, edited) is no measurement. Before: read."""
    text = fixture_text("send_lat_4.5_client.txt")
    row = next(ln for ln in text.splitlines() if ln.startswith(" 2 "))
    swapped = row.replace("1.02", "X").replace("7.31 ", "1.02 ", 1).replace("X", "7.31")  # t_min <-> t_max
    with pytest.raises(InputError, match=r"^f.txt:19: latencies out of order: .* got t_min 7.31, t_typical 1.07"):
        parse_text(text.replace(row, swapped), source="f.txt")
    doc = fixture_text("send_lat_25.10_out.json").replace('"t_avg": 1.09', '"t_avg": 9.09')
    with pytest.raises(InputError, match=r"results: latencies out of order: .* t_avg 9.09"):
        parse_json(doc)


@pytest.mark.parametrize(
    "header",
    [
        " #bytes #iterations BW average[MB/sec] MsgRate[Mpps]",  # no BW peak
        " #bytes #iterations BW peak[MB/sec] BW average[MB/sec]",  # no MsgRate
        " #bytes BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]",  # no #iterations
        " #bytes #iterations BW peak[Gb/sec] BW average[MB/sec] MsgRate[Mpps]",  # two units
        " #bytes t_min[usec] t_max[usec] t_typical[usec] t_avg[usec] t_stdev[usec]"
        " 99% percentile[usec] 99.9% percentile[usec]",  # no #iterations
    ],
)
def test_a_table_header_short_of_a_column_read_is_unknown_not_an_internal_error(header):
    """Before, a header with BW average but no BW peak, MsgRate or #iterations passed as a
    bandwidth table and the row's missing column was a KeyError: `testbed report` said
    'internal error', exit 70, and did not try the flow's other side."""
    row = " ".join(["2"] * len(header.split("]"))) if "t_min" in header else "65536 833489 0.00 5209.31"
    text = f"{header}\n {row}\n" + "-" * 87 + "\n"
    with pytest.raises(InputError, match=r"^out.txt:1: unknown perftest result table header"):
        parse_text(text, source="out.txt")


@pytest.mark.parametrize(
    ("test_info", "said"),
    [("[1]", r"^f.json: test_info: \"test_info\" is not an object"), ('"x"', "not an object"), ('{"Mtu": "²"}', None)],
)
def test_an_out_json_test_info_not_perftests_is_bad_input_not_an_internal_error(test_info, said):
    """Before, a "test_info" that is a list or a string was an AttributeError and an Mtu of
    '²' (str.isdigit) a ValueError: internal error, exit 70. Now the first is named, and an
    Mtu that is no number is not known (as a missing one)."""
    text = fixture_text("send_bw_25.10_out.json")
    start, end = text.index('"test_info": {') + len('"test_info": '), text.index('"results"')
    text = text[:start] + test_info + ",\n" + text[end:]
    if said is None:
        assert parse_json(text, source="f.json").mtu is None
    else:
        with pytest.raises(InputError, match=said):
            parse_json(text, source="f.json")


@pytest.mark.parametrize(
    ("key", "value"), [("BW_average", "-5209.31"), ("MsgRate", "-0.083349"), ("n_iterations", "true")]
)
def test_an_out_json_negative_or_boolean_is_named_as_such(key, value):
    """The table refuses a negative number; --out_json took one (and `true` as 1), so a
    negative BW average and MsgRate were said to be 'a number in another unit, or edited'."""
    text = re.sub(rf'"{key}": [^,\n]+', f'"{key}": {value}', fixture_text("send_bw_25.10_out.json"))
    with pytest.raises(InputError, match=rf"^f.json: {key}: not a count or a rate: "):
        parse_json(text, source="f.json")
