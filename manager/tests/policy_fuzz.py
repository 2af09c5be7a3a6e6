"""A policy fuzzer: hypothesis builds policies from the schema's own vocabulary, dumps them as
YAML, then plays YAML-level tricks on the text and bytes (anchors, aliases, alias bombs,
merge keys, deep nesting, huge scalars, tags, odd bytes, truncation). Each file goes through
`load_policy` and, when it loads, the planner. The only acceptable outcomes are a plan or one
IbqosError line; anything else (a traceback, a hang) is a finding.

Used by test_policy_fuzz.py (a few seconds in make test) and by `make fuzz-policy`
(`python manager/tests/policy_fuzz.py N`, the long run that counts executions and findings).
"""

from __future__ import annotations

import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ibqos.errors import IbqosError

# ---- structure: mostly valid vocabulary, sometimes anything --------------------------------
junk = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def maybe(strategy):
    """Usually the schema's vocabulary, one time in forty anything at all (a policy has some
    twenty fields, so about one policy in three carries junk somewhere)."""
    return st.one_of(*[strategy] * 39, junk)


names = st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True)
guids = st.one_of(st.integers(0, 2**64), st.from_regex(r"0x[0-9a-fA-F]{1,16}(-0x[0-9a-f]{1,4})?", fullmatch=True))
fabric = st.fixed_dictionaries(
    {},
    optional={
        "rate": maybe(st.sampled_from(["QDR", "FDR", "EDR", "HDR", "NDR", 56, 100.0, "XYZ"])),
        "mtu": maybe(st.sampled_from([256, 512, 1024, 2048, 4096, 3000])),
        "data_vls": maybe(st.sampled_from([1, 2, 4, 8, 15, 3])),
        "vlarb_cap": maybe(st.fixed_dictionaries({}, optional={"high": st.integers(0, 70), "low": st.integers(0, 70)})),
        "routing": maybe(st.sampled_from(["dla", "minhop", "ftree", "lash", "nope"])),
        "accounting": maybe(st.sampled_from(["byte", "packet"])),
    },
)
match = st.fixed_dictionaries(
    {},
    optional={
        "service_id": maybe(st.lists(guids, max_size=3)),
        "pkey": maybe(st.lists(guids, max_size=3)),
        "qos_class": maybe(st.lists(st.integers(0, 20), max_size=3)),
        "direction": maybe(st.sampled_from(["source", "destination", "both", "either"])),
        "groups": maybe(
            st.lists(
                st.fixed_dictionaries(
                    {"name": names},
                    optional={
                        "port_guid": st.lists(guids, max_size=3),
                        "port_name": st.lists(st.text(max_size=12), max_size=3),
                        "node_type": st.lists(
                            st.sampled_from(["CA", "SWITCH", "ROUTER", "ALL", "SELF", "X"]), max_size=2
                        ),
                    },
                ),
                max_size=2,
            )
        ),
        "ulps": maybe(
            st.lists(
                st.one_of(
                    st.sampled_from(["ipoib", "sdp", "rds", "srp", "iser", "any"]),
                    st.fixed_dictionaries(
                        {"ulp": st.sampled_from(["ipoib", "sdp", "srp", "iser", "any"])},
                        optional={
                            "pkey": guids,
                            "port_num": st.integers(0, 70000),
                            "service_id": guids,
                            "target_port_guid": guids,
                        },
                    ),
                ),
                max_size=3,
            )
        ),
    },
)
role_names = st.sampled_from(["ca", "sw0", "terminal", "local", "global", "other"])
klass = st.fixed_dictionaries(
    {
        "name": maybe(names),
        "bandwidth": maybe(st.one_of(st.integers(-5, 120), st.floats(0, 100), st.just("rest"), st.just("25%"))),
    },
    optional={
        "priority": maybe(st.sampled_from(["high", "low", "medium"])),
        "max_latency_us": maybe(st.floats(0, 1e6)),
        "max_distance": maybe(st.integers(0, 100)),
        "sls": maybe(st.lists(st.integers(-1, 17), max_size=4)),
        "default": maybe(st.booleans()),
        "match": maybe(match),
        "roles": maybe(
            st.dictionaries(
                role_names,
                st.fixed_dictionaries(
                    {},
                    optional={
                        "bandwidth": st.integers(0, 100),
                        "max_latency_us": st.floats(0, 100),
                        "max_distance": st.integers(0, 70),
                    },
                ),
                max_size=2,
            )
        ),
    },
)
default_class = st.just({"name": "rest", "priority": "low", "bandwidth": "rest", "default": True})
policies = st.fixed_dictionaries(
    {
        "classes": maybe(
            st.builds(
                lambda cs, d: cs + d,
                st.lists(klass, min_size=0, max_size=5),
                st.one_of(st.just([]), st.lists(default_class, min_size=1, max_size=1)),
            )
        )
    },
    optional={"fabric": maybe(fabric)},
)


# ---- YAML-level tricks on the text ---------------------------------------------------------
def _bomb(depth: int, width: int) -> str:
    rows = [f"b0: &b0 [{', '.join(['x'] * width)}]"]
    rows += [f"b{i}: &b{i} [{', '.join([f'*b{i - 1}'] * width)}]" for i in range(1, depth + 1)]
    return "\n".join(rows) + "\n"


tricks = st.one_of(
    st.builds(lambda n: ("append", f"deep: {'[' * n}{']' * n}\n"), st.integers(1, 1200)),
    st.builds(lambda n: ("append", f"deep: {'{a: ' * n}1{'}' * n}\n"), st.integers(1, 400)),
    st.builds(lambda n: ("append", "deep:\n" + "".join(" " * i + "- \n" for i in range(n))), st.integers(1, 200)),
    st.builds(lambda d, w: ("append", _bomb(d, w)), st.integers(1, 12), st.integers(1, 12)),
    st.builds(
        lambda n, c: ("append", f"big: {c * n}\n"), st.integers(1, 10000), st.sampled_from(["9", "a", "1.", "0x1"])
    ),
    st.just(("append", "self: &s [*s]\n")),
    st.just(("append", "selfmap: &m {k: *m}\n")),
    st.just(("append", "undefined: *nothing\n")),
    st.just(("append", "<<: {fabric: {mtu: 2048}}\n")),
    st.just(("append", "m: &m {mtu: 2048}\nfabric2:\n  <<: *m\n")),
    st.just(("append", "t: !!python/object/apply:os.system [true]\n")),
    st.just(("append", "t: !custom x\n")),
    st.just(("append", "t: !!binary aGVsbG8=\n")),
    st.just(("append", "t: 2001-12-14t21:59:43.10-05:00\n")),
    st.just(("append", "t: !!set {a, b}\n")),
    st.just(("append", "t: [.inf, -.inf, .nan, 1.0e+999]\n")),
    st.just(("append", "? [a, b]\n: c\n")),
    st.just(("append", "? {a: b}\n: c\n")),
    st.just(("append", "---\nsecond: doc\n")),
    st.just(("append", "fabric: {}\n")),  # duplicate top-level key
    st.builds(lambda s: ("anchor", s), st.integers(0, 10**6)),  # alias an earlier value
    st.builds(lambda b, at: ("bytes", b, at), st.binary(min_size=1, max_size=8), st.integers(0, 10**6)),
    st.builds(lambda at: ("truncate", at), st.integers(0, 10**6)),
    st.just(("prefix", "\ufeff")),
    st.just(("crlf",)),
    st.just(("tabs",)),
)


def _apply_trick(text: str, trick) -> bytes:
    kind = trick[0]
    if kind == "append":
        return (text + trick[1]).encode()
    if kind == "prefix":
        return (trick[1] + text).encode()
    if kind == "crlf":
        return text.replace("\n", "\r\n").encode()
    if kind == "tabs":
        return text.replace("  ", "\t").encode()
    if kind == "anchor":  # give one value an anchor and use it again at the end
        lines = text.splitlines()
        cand = [i for i, ln in enumerate(lines) if ln.rstrip().endswith(":") is False and ": " in ln]
        if not cand:
            return text.encode()
        i = cand[trick[1] % len(cand)]
        key, _, val = lines[i].partition(": ")
        lines[i] = f"{key}: &x {val}"
        return ("\n".join(lines) + "\nagain: *x\n").encode()
    data = text.encode()
    at = trick[-1] % (len(data) + 1)
    if kind == "bytes":
        return data[:at] + trick[1] + data[at:]
    return data[:at]  # truncate


documents = st.builds(
    lambda doc, ts: (doc, ts), policies, st.one_of(st.just([]), st.lists(tricks, min_size=1, max_size=3))
)


def render(doc, ts) -> bytes:
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    data = text.encode()
    for t in ts:
        data = _apply_trick(data.decode(errors="replace"), t)
    return data


def check(data: bytes, path: Path) -> str:
    """'planned', 'refused' or raise: a non-IbqosError exception is a finding."""
    from ibqos.planner import make_plan
    from ibqos.policy import load_policy

    path.write_bytes(data)
    try:
        make_plan(load_policy(path))
        return "planned"
    except IbqosError as e:
        msg = str(e)
        assert msg and "\n" not in msg, f"not one error line: {msg!r}"
        return "refused"


# ---- the long run ----------------------------------------------------------------------------
class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


def long_run(n: int, per_example_s: int = 5) -> int:
    stats = {"planned": 0, "refused": 0}
    findings: list[str] = []
    tmp = Path(tempfile.mkdtemp(prefix="ibqos-fuzz-policy-"))
    path = tmp / "p.yaml"
    signal.signal(signal.SIGALRM, _alarm)
    t0 = time.monotonic()

    @settings(max_examples=n, deadline=None, database=None, derandomize=False, suppress_health_check=list(HealthCheck))
    @given(documents)
    def run(case):
        data = render(*case)
        signal.alarm(per_example_s)
        try:
            stats[check(data, path)] += 1
        except Hang:
            findings.append(f"hang > {per_example_s} s: {data[:200]!r}")
        except Exception:  # noqa: BLE001 - every other one is a finding
            findings.append(f"{traceback.format_exc(limit=3)}\ninput: {data[:300]!r}")
        finally:
            signal.alarm(0)
        done = stats["planned"] + stats["refused"] + len(findings)
        if done % 5000 == 0:
            print(f"  {done} policies, {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)

    run()
    total = stats["planned"] + stats["refused"] + len(findings)
    print(
        f"fuzz-policy: {total} policies in {time.monotonic() - t0:.0f} s: "
        f"{stats['planned']} planned, {stats['refused']} refused with one line, "
        f"{len(findings)} findings (tracebacks or hangs)"
    )
    for f in findings[:20]:
        print("---\n" + f)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(long_run(int(sys.argv[1]) if len(sys.argv) > 1 else 100000))
