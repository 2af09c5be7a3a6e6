"""The perftest parser on every header variant, both --out_json dialects, and broken output."""

from __future__ import annotations

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
    assert parse_file(json_out, json_unit="Gb/sec").gbps == 5209.31
    assert parse_file(text_out, json_unit="Gb/sec").gbps == pytest.approx(43.70, abs=0.005)


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
        (" Did not detect devices \n If device exists, check if driver is up\n", "no perftest result table"),
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
