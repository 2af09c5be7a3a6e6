"""Write docs/arbiter-vectors.json: golden VLArb cases for the analyzer and the simulator.

    .venv/bin/python manager/tests/make_arbiter_vectors.py

Shares come from the exact analyzer and are checked, when written and by
test_arbiter_vectors.py, against the closed form (arbiter/shares.py) and, for seed 002's
configurations, against the hand formula. Change docs/arbiter.md first, then regenerate.
"""

from __future__ import annotations

import json
from pathlib import Path

from ibqos.arbiter import ArbTable
from ibqos.arbiter.exact import analyze_exact
from ibqos.arbiter.shares import long_run_shares
from seed002_tables import CONFIG_A, CONFIG_B

OUT = Path(__file__).resolve().parents[2] / "docs" / "arbiter-vectors.json"

CASES = [
    ("seed002-A", CONFIG_A, "seed 002 Table 1 configuration A"),
    ("seed002-B", CONFIG_B, "seed 002 Table 1 configuration B"),
    (
        "limit0-alternate",
        ArbTable([(0, 32), (1, 32)], [(2, 16), (3, 16)], 0),
        "VLHighLimit 0: one high packet, then one low turn",
    ),
    (
        "limit255-starve",
        ArbTable([(0, 10), (1, 20)], [(2, 255)], 255),
        "VLHighLimit 255: the low table never runs under saturation",
    ),
    (
        "weight0-skip",
        ArbTable([(0, 64), (1, 0), (2, 64)], [(3, 0), (4, 32)], 2),
        "weight-0 entries are skipped; VL1 and VL3 never send",
    ),
    ("low-only", ArbTable([], [(0, 10), (1, 30), (2, 60)], 1), "an empty high table"),
    ("vl-in-both", ArbTable([(0, 40), (1, 40)], [(0, 100), (2, 100)], 3), "a VL in both tables is served by both"),
    (
        "small-weights-deficit",
        ArbTable([(0, 1), (1, 3), (2, 7)], [(3, 2)], 1),
        "weights far below one packet: the byte mode carries the deficit",
    ),
    (
        "dla-pairs",
        ArbTable([(0, 64), (1, 64), (2, 96), (3, 96)], [(4, 48), (5, 48), (6, 16), (7, 16)], 1),
        "DLA class pairs (2c, 2c+1) with equal entries",
    ),
]
SIZES = (64, 256, 2048, 4096)


def main() -> None:
    vectors = []
    for name, table, what in CASES:
        for mode in ("byte", "packet"):
            for size in SIZES:
                a = analyze_exact(table, size, mode)
                closed = long_run_shares(table, size, mode)
                shares = {str(v): round(s.share, 9) for v, s in sorted(a.per_vl.items())}
                for v, s in a.per_vl.items():
                    assert abs(s.share - closed[v]) < 1e-9, (name, mode, size, v)
                vectors.append(
                    {
                        "name": f"{name}/{mode}/{size}",
                        "description": what,
                        "high": [list(e) for e in table.high],
                        "low": [list(e) for e in table.low],
                        "limit": table.limit,
                        "packet_bytes": size,
                        "mode": mode,
                        "shares": shares,
                        "period_bytes": a.window_bytes,
                    }
                )
    head = {
        "schema": "ibqos.arbiter-vectors/1",
        "semantics": "docs/arbiter.md",
        "note": "Saturation (every VL in a table always active, infinite credits). shares: % "
        "of bytes per VL over one exact period; VLs that never send have share 0.",
    }
    body = ",\n  ".join(json.dumps(v, separators=(", ", ": ")) for v in vectors)
    OUT.write_text(json.dumps(head, indent=1)[:-2] + ',\n "vectors": [\n  ' + body + "\n ]\n}\n")
    json.loads(OUT.read_text())
    print(f"{OUT}: {len(vectors)} vectors")


if __name__ == "__main__":
    main()
