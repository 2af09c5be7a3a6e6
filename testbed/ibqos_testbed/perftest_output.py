"""Parse what ib_send_bw / ib_send_lat print: the result table on stdout, or the --out_json file.

Formats understood (learned from linux-rdma/perftest src/perftest_parameters.h, not copied):
- bandwidth header `BW average[MB/sec]` (perftest <= 4.5 and releases before 24.07),
  `BW average[MiB/sec]` (24.07 and later; same unit, renamed) and `BW average[Gb/sec]`
  (--report_gbits, any release), with or without --cpu_util's `CPU_Util[%]` column;
- the latency table `t_min[usec] ... 99.9% percentile[usec]` printed with -n iterations, also
  with -H/-U (the samples, then the header again, inside the table);
- --out_json: valid JSON with quoted keys (24.01 and later) and the `key: value,` text that
  4.5 writes under the same option, which is not JSON (unquoted keys, trailing commas).

A table starts at a line whose first word is `#bytes` and ends at the next line of dashes.
Warnings that land inside it when stderr is captured with stdout (CPU frequency, PCIe
relaxed ordering) are skipped; any other line there is an error, as is a table that never
ends, so truncated and garbled output never yields a number.

One measurement per flow is what the method compares, so these are refused with their reason:
a bidirectional run (-b: both directions summed), rows of several message sizes (-a) unless
the caller names the size, and several rows of one size (--run_infinitely, one per period).
The `Mtu` perftest ran with is kept: when the port's active MTU is below -m, perftest says
"Requested mtu is higher than active mtu" and runs at the smaller one.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from ibqos.errors import InputError
from ibqos.inputfile import MiB, read_bytes

# MB/sec in perftest has always meant 2^20 bytes per second (renamed MiB/sec in 24.07).
_BYTES_PER_UNIT = {"MB/sec": 2**20, "MiB/sec": 2**20}
BW_UNITS = ("MB/sec", "MiB/sec", "Gb/sec")

_COLUMN = re.compile(
    r"#\w+|(?:\d+(?:\.\d+)?% )?[A-Za-z_][\w.]*(?: [A-Za-z_][\w.]*)*\[[^\]]+\]"
    r"|tps average"
)
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_COUNT = re.compile(r"\d+")  # #bytes and #iterations: perftest prints them with %lu
_END = re.compile(r"^-{20,}\s*$")
_NOISE = (
    re.compile(r"Conflicting CPU frequency values detected"),
    re.compile(r"CPU Frequency is not max"),
    re.compile(r"^\s*WARNING\b", re.IGNORECASE),
    # -H / -U: print_report_lat lists the samples as "#, usec" then "N, value" lines
    re.compile(r"^#, \w+\s*$"),
    re.compile(r"^\d+, \S+\s*$"),
)
_TITLE = re.compile(r"^\s+\S.*\bTest\s*$")  # "                    Send BW Test" (ctx_print_test_info)
_MTU = re.compile(r"^\s*Mtu\s*:\s*(\d+)\[B\]")
# what perftest prints on stderr/stdout when it gives up (send_bw.c, perftest_resources.c)
_FAILED = re.compile(r"Couldn't|Failed to|Unable to|Did not detect|No IB devices|not found|Error\b")
_LAT_COLUMNS = {
    "t_min[usec]": "t_min",
    "t_max[usec]": "t_max",
    "t_typical[usec]": "t_typical",
    "t_avg[usec]": "t_avg",
    "t_stdev[usec]": "t_stdev",
    "99% percentile[usec]": "p99",
    "99.9% percentile[usec]": "p99_9",
}
_LAT_JSON = {
    "t_min": "t_min",
    "t_max": "t_max",
    "t_typical": "t_typical",
    "t_avg": "t_avg",
    "t_stdev": "t_stdev",
    "percentile_99": "p99",
    "percentile_99.9": "p99_9",
}


@dataclass(frozen=True)
class Bandwidth:
    msg_size: int
    iterations: int
    bw_peak: float
    bw_average: float
    unit: str  # one of BW_UNITS
    msg_rate_mpps: float
    mtu: int | None = None  # what perftest ran with (its "Mtu" line), None when not printed
    line: int | None = field(default=None, compare=False)  # of the result row; None in --out_json

    @property
    def gbps(self) -> float:
        """Average bandwidth in Gb/s (10^9 bit/s), whatever unit perftest printed."""
        if self.unit == "Gb/sec":
            return self.bw_average
        return self.bw_average * _BYTES_PER_UNIT[self.unit] * 8 / 1e9


@dataclass(frozen=True)
class Latency:
    msg_size: int
    iterations: int
    t_min: float
    t_max: float
    t_typical: float
    t_avg: float
    t_stdev: float
    p99: float
    p99_9: float
    mtu: int | None = None
    line: int | None = field(default=None, compare=False)


Result = Bandwidth | Latency


def _latency(msg_size: int, iterations: int, t: dict[str, float], mtu: int | None, source, line: int | None) -> Latency:
    """print_report_lat prints them from one sorted array (min, median, p99, p99.9, the
    element after the kept ones) and the mean of the kept ones: a row out of that order is
    not one perftest printed."""
    order = ("t_min", "t_typical", "p99", "p99_9", "t_max")
    if any(t[a] > t[b] for a, b in pairwise(order)) or not t["t_min"] <= t["t_avg"] <= t["t_max"]:
        raise InputError(
            "latencies out of order: perftest prints t_min <= t_typical <= 99% <= 99.9% <= t_max "
            f"and t_min <= t_avg <= t_max, got {', '.join(f'{k} {t[k]:g}' for k in (*order, 't_avg'))}",
            file=source,
            line=line,
            field=None if line else "results",
        )
    return Latency(
        msg_size,
        iterations,
        t["t_min"],
        t["t_max"],
        t["t_typical"],
        t["t_avg"],
        t["t_stdev"],
        t["p99"],
        t["p99_9"],
        mtu=mtu,
        line=line,
    )


def parse_file(
    path: str | Path, *, json_unit: str = "MB/sec", size: int | None = None, kind: str | None = None
) -> Result:
    """Parse a saved stdout capture or --out_json file; the format is recognised from the content.
    `size`: the message size the run asked for (-s), the row of that size is the result;
    `kind`: "bw" or "lat", what the file must hold."""
    path = Path(path)
    # a FIFO or /dev/zero named in results.json is refused, not waited on or read forever;
    # perftest prints a few KiB, so 16 MiB is garbage, not output
    text = read_bytes(path, limit=16 * MiB, what="perftest output").decode("utf-8", errors="replace")
    if "\0" in text:
        raise InputError("binary data, not perftest output", file=path, line=text.count("\n", 0, text.index("\0")) + 1)
    if text.lstrip().startswith("{"):
        return parse_json(text, source=path, unit=json_unit, size=size, kind=kind)
    return parse_text(text, source=path, size=size, kind=kind)


def parse_text(
    text: str, *, source: str | Path = "<stdout>", size: int | None = None, kind: str | None = None
) -> Result:
    """The result row of the first result table in perftest's stdout (of message size `size`
    when given; a table of several sizes needs it)."""
    lines = text.splitlines()
    if not text.strip():
        raise InputError("empty output: perftest printed nothing", file=source)
    start = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("#bytes")), None)
    if start is None:
        if failed := failure_line(text):
            raise InputError(f"perftest failed, no result: {failed[1]!r}", file=source, line=failed[0])
        raise InputError("no perftest result table (no '#bytes' header line)", file=source)
    _refuse_bidirectional(lines[:start], source)
    mtu = next((int(m.group(1)) for ln in lines[:start] if (m := _MTU.match(ln))), None)
    header = lines[start]
    columns = _COLUMN.findall(header)
    found = _table_kind(columns, source, start + 1)
    _check_kind(found, kind, source, start + 1)
    rows, ended = _rows(lines, start, columns, source)
    if not ended and len(rows) > 1 and len({r[1][0] for r in rows}) == 1:
        raise InputError(
            f"{len(rows)} result rows of one message size and no end: a --run_infinitely capture (a row "
            "per period); the method needs one measurement per flow (-D SECONDS)",
            file=source,
            line=rows[1][0],
        )
    if not ended:
        what = "after the last result row" if rows else "and no result row"
        raise InputError(
            f"truncated output: result table at line {start + 1} never ends ({what})", file=source, line=len(lines)
        )
    if not rows:
        raise InputError("truncated output: result table has a header but no result row", file=source, line=start + 1)
    line, values = _one_row(rows, size, source, start + 1)
    row = dict(zip(columns, values, strict=False))
    if found == "lat":
        times = {field: row[col] for col, field in _LAT_COLUMNS.items()}
        return _latency(int(row["#bytes"]), int(row["#iterations"]), times, mtu, source, line)
    unit = next(u for u in BW_UNITS if f"BW peak[{u}]" in row and f"BW average[{u}]" in row)
    return _in_its_unit(
        Bandwidth(
            msg_size=int(row["#bytes"]),
            iterations=int(row["#iterations"]),
            bw_peak=row[f"BW peak[{unit}]"],
            bw_average=row[f"BW average[{unit}]"],
            unit=unit,
            msg_rate_mpps=row["MsgRate[Mpps]"],
            mtu=mtu,
            line=line,
        ),
        source,
    )


def _in_its_unit(bw: Bandwidth, source) -> Bandwidth:
    """perftest derives both numbers from one count (print_report_bw): BW average x the unit's
    bytes = MsgRate x 10^6 x #bytes. A row where they disagree beyond printing's rounding
    (%.2f and %.6f) is in another unit than its header (or the run's, for --out_json) or edited."""
    unit_bytes = 125_000_000 if bw.unit == "Gb/sec" else _BYTES_PER_UNIT[bw.unit]
    said = bw.bw_average * unit_bytes
    counted = bw.msg_rate_mpps * 1e6 * bw.msg_size
    rounding = 0.005 * unit_bytes + 0.5 * bw.msg_size
    if abs(said - counted) > rounding + 0.01 * max(said, counted):
        raise InputError(
            f"BW average {bw.bw_average:g} {bw.unit} is not MsgRate {bw.msg_rate_mpps:g} Mpps x {bw.msg_size} bytes "
            f"({counted / unit_bytes:.2f} {bw.unit}): a number in another unit, or edited",
            file=source,
            line=bw.line,
            field=None if bw.line else "results.BW_average",
        )
    return bw


def failure_line(text: str) -> tuple[int, str] | None:
    """The first line (number, text) where perftest says it gave up, if it said so."""
    return next(((n, ln.strip()) for n, ln in enumerate(text.splitlines(), 1) if _FAILED.search(ln)), None)


def _rows(lines: list[str], start: int, columns: list[str], source) -> tuple[list[tuple[int, list[float]]], bool]:
    """The table's rows as (line number, values), and whether its closing line of dashes came."""
    header = lines[start].strip()
    rows: list[tuple[int, list[float]]] = []
    i = start + 1
    while i < len(lines):
        ln = lines[i]
        if _END.match(ln):
            # -H/-U print the header again after the samples, below a line of dashes
            nxt = next((j for j in range(i + 1, len(lines)) if lines[j].strip()), None)
            if nxt is None or lines[nxt].strip() != header:
                return rows, True
            i = nxt + 1
            continue
        i += 1
        if not ln.strip() or any(p.search(ln) for p in _NOISE):
            continue
        words = ln.split()
        if not all(_NUMBER.fullmatch(w) for w in words) or len(words) != len(columns):
            raise InputError(
                f"garbled result row: expected {len(columns)} numbers under '{header}', got {ln.strip()!r}",
                file=source,
                line=i,
            )
        if not (_COUNT.fullmatch(words[0]) and _COUNT.fullmatch(words[1])):
            raise InputError(f"#bytes and #iterations must be whole numbers, got {ln.strip()!r}", file=source, line=i)
        values = [float(w) for w in words]
        if not all(map(math.isfinite, values)):
            raise InputError(f"number too large in result row {ln.strip()!r}", file=source, line=i)
        if any(v < 0 for v in values):
            raise InputError(f"negative number in result row {ln.strip()!r}", file=source, line=i)
        rows.append((i, values))
    return rows, False


def _one_row(
    rows: list[tuple[int, list[float]]], size: int | None, source, header_line: int
) -> tuple[int, list[float]]:
    sizes = list(dict.fromkeys(int(v[0]) for _, v in rows))
    if size is not None:
        rows = [r for r in rows if int(r[1][0]) == size]
        if not rows:
            raise InputError(
                f"no result row of message size {size} (the run's -s); rows of {', '.join(map(str, sizes))} bytes",
                file=source,
                line=header_line,
            )
    elif len(sizes) > 1:
        raise InputError(
            f"result rows of {len(sizes)} message sizes ({sizes[0]}..{sizes[-1]} bytes, -a): name the size to compare",
            file=source,
            line=header_line,
        )
    if len(rows) > 1:
        raise InputError(f"{len(rows)} result rows of message size {int(rows[0][1][0])}", file=source, line=rows[1][0])
    return rows[0]


def _check_kind(found: str, want: str | None, source, line: int | None) -> None:
    if want is not None and found != want:
        names = {"bw": "a bandwidth result (ib_send_bw's)", "lat": "a latency result (ib_send_lat's)"}
        raise InputError(f"{names[found]}, not {names[want]}", file=source, line=line)


def _refuse_bidirectional(head: list[str], source) -> None:
    """-b sums both directions; the method compares one direction's shares at one port."""
    for n, ln in enumerate(head, 1):
        if _TITLE.match(ln) and "Bidirectional" in ln.split():
            raise InputError(
                f"a bidirectional run ({ln.strip()!r}, -b): its bandwidth is both directions' sum; "
                "the method measures one direction, at the port facing the receiver (run without -b)",
                file=source,
                line=n,
            )


def _table_kind(columns: list[str], source, line: int) -> str:
    if any(c in columns for c in (f"BW average[{u}]" for u in BW_UNITS)):
        if "#sl" in columns:
            raise InputError("per-SL raw Ethernet QoS table is not an ib_send_bw result", file=source, line=line)
        # every column parse_text reads, in one unit: a header short of one (or mixing units)
        # is no table perftest printed, and read on it met a KeyError (internal error, exit 70)
        if any(
            {"#bytes", "#iterations", f"BW peak[{u}]", f"BW average[{u}]", "MsgRate[Mpps]"} <= set(columns)
            for u in BW_UNITS
        ):
            return "bw"
    elif {"#bytes", "#iterations", *_LAT_COLUMNS} <= set(columns):
        return "lat"
    if "tps average" in columns:
        raise InputError(
            "latency table of a duration run (-D) has only t_avg; run ib_send_lat "
            "with -n ITERATIONS for the full table",
            file=source,
            line=line,
        )
    raise InputError(f"unknown perftest result table header: {' '.join(columns) or '(empty)'}", file=source, line=line)


def parse_json(
    text: str, *, source: str | Path = "<json>", unit: str = "MB/sec", size: int | None = None, kind: str | None = None
) -> Result:
    """An --out_json file. `unit` is what the run printed (MB/sec unless --report_gbits was
    given): the file itself does not say. perftest rewrites the file for each size of an -a
    run, so it holds the last size's result: `size` is the one it must hold."""
    if unit not in BW_UNITS:
        raise InputError(f"unknown bandwidth unit {unit!r}", file=source, field="unit")
    if not text.strip():
        raise InputError("empty --out_json file", file=source)
    if re.search(r'^\s*"(test_info|results)"\s*:', text, re.MULTILINE):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"garbled --out_json file: {e.msg} (column {e.colno})", file=source, line=e.lineno) from e
        if not isinstance(doc, dict) or not isinstance(doc.get("results"), dict):
            raise InputError('--out_json file has no "results" object', file=source)
        results, info = doc["results"], doc.get("test_info") or {}
        if not isinstance(info, dict):  # read on, .get met a list or a string: internal error, exit 70
            raise InputError('"test_info" is not an object', file=source, field="test_info")
    else:
        info, results = _sections_of_v45_json(text, source)
    test = str(info.get("test", ""))
    if "Bidirectional" in test.split("_"):
        raise InputError(
            f"a bidirectional run ({test}, -b): its bandwidth is both directions' sum; the method "
            "measures one direction, at the port facing the receiver (run without -b)",
            file=source,
            field="test_info.test",
        )
    mtu = info.get("Mtu")
    found = "lat" if "Latency" in test or "t_avg" in results else "bw"
    _check_kind(found, kind, source, None)
    # ASCII digits: str.isdigit also takes '²', which int() refuses (internal error, exit 70)
    r = _result_from_json(results, found, unit, source, int(str(mtu)) if re.fullmatch("[0-9]+", str(mtu)) else None)
    if size is not None and r.msg_size != size:
        raise InputError(f"MsgSize {r.msg_size}, not the run's -s {size}", file=source, field="results.MsgSize")
    return r


def _sections_of_v45_json(text: str, source) -> tuple[dict, dict]:
    """perftest 4.5's --out_json: `{`, `test_info: {`, `key: value,` lines, `},`, `results: {` ..."""
    sections: dict[str, dict] = {}
    current: dict | None = None
    lines = text.splitlines()
    depth = 0
    for n, ln in enumerate(lines, 1):
        s = ln.strip()
        if not s:
            continue
        m = re.fullmatch(r"(\w+)\s*:\s*\{", s)
        if s == "{":
            depth += 1
        elif m:
            current = sections.setdefault(m.group(1), {})
            depth += 1
        elif s in ("}", "},"):
            current = None
            depth -= 1
        elif current is not None and (kv := re.fullmatch(r'"?([\w .]+?)"?\s*:\s*(.*?),?', s)):
            current[kv.group(1).strip()] = kv.group(2).strip().strip('"')
        else:
            raise InputError(f"garbled --out_json file: unexpected {s!r}", file=source, line=n)
    if "results" not in sections:
        raise InputError("--out_json file has no results section", file=source, line=len(lines))
    if depth != 0:
        raise InputError("truncated --out_json file: unbalanced braces", file=source, line=len(lines))
    return sections.get("test_info", {}), sections["results"]


def _result_from_json(results: dict, kind: str, unit: str, source, mtu: int | None) -> Result:
    def num(key: str) -> float:
        if key not in results:
            raise InputError(f"--out_json results lack {key!r}", file=source, field=key)
        try:
            v = float(results[key])
        except (TypeError, ValueError) as exc:
            raise InputError(f"not a number: {results[key]!r}", file=source, field=key) from exc
        if not math.isfinite(v):  # "nan", "inf", 1e999: never a measurement
            raise InputError(f"not a finite number: {results[key]!r}", file=source, field=key)
        if v < 0 or isinstance(results[key], bool):
            # refused in the table too; negatives passed here, named as numbers "in another unit"
            raise InputError(f"not a count or a rate: {results[key]!r}", file=source, field=key)
        return v

    if kind == "lat":
        times = {field: num(key) for key, field in _LAT_JSON.items()}
        return _latency(int(num("MsgSize")), int(num("n_iterations")), times, mtu, source, None)
    bw = Bandwidth(
        msg_size=int(num("MsgSize")),
        iterations=int(num("n_iterations")),
        bw_peak=num("BW_peak"),
        bw_average=num("BW_average"),
        unit=unit,
        msg_rate_mpps=num("MsgRate"),
        mtu=mtu,
    )
    return _in_its_unit(bw, source)
