"""Reference runs of the simulator: results that must stay bit-identical for a given seed.

The cases cover every path of the core that a speed-up could change: shared and per-output VOQ
buffers, no VOQ, one read per input, byte and packet accounting, the calendar and heap queues,
multi-packet paced messages and a deadlock's witness. data/sim_reference.json holds their
results (the host's timings left out) as main's simulator computed them before issue 25's
rewrite of the hot state; test_sim_reference.py checks today's core against it.

    .venv/bin/python ci-sim/tests/simreference.py    # rewrite the file (only on purpose)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ibqos_sim.sim import SimParams, TrafficClass, TrafficSpec, simulate
from ibqos_sim.sim.result import without_timing
from simfabrics import config_a, dragonfly_dla, star

REFERENCE = Path(__file__).resolve().parent / "data" / "sim_reference.json"
SHORT = dict(warmup_us=50, time_us=250)


def cases() -> dict:
    """name: (fabric, traffic, params, load)."""
    df = dragonfly_dla(4, 2, 2, vls=2)
    df1 = dragonfly_dla(4, 2, 2, vls=1)
    mix = TrafficSpec(
        classes=[
            TrafficClass(name="paced", sl=0, msg_bytes=16384, rate=0.3),
            TrafficClass(name="bulk", sl=1, pattern="uniform"),
        ]
    )
    two = TrafficSpec(pattern="twonode", sls=[0, 1, 2, 3], src="ca0,ca1", dst="ca2")
    return {
        "df72-voq-load1": (df, TrafficSpec(), SimParams(seed=3, **SHORT), 1.0),
        "df72-novoq-load0.8": (df, TrafficSpec(), SimParams(voq=False, seed=4, **SHORT), 0.8),
        "df72-peroutput-1read": (
            df,
            TrafficSpec(),
            SimParams(voq_buffers="per-output", input_reads=1, seed=5, **SHORT),
            1.0,
        ),
        "df72-cbr-heap-multipacket": (
            df,
            TrafficSpec(process="cbr", msg_bytes=10000),
            SimParams(evq="heap", seed=6, **SHORT),
            0.9,
        ),
        "df72-two-classes": (df, mix, SimParams(seed=7, **SHORT), 1.0),
        "df72-1vl-deadlock": (df1, TrafficSpec(), SimParams(buffer_packets=1, seed=8, **SHORT), 1.0),
        "star-config-a-packet": (
            star(3, config_a(), vls=4),
            two,
            SimParams(rate=100, accounting="packet", seed=9, **SHORT),
            1.0,
        ),
    }


def run_case(case) -> dict:
    fabric, traffic, params, load = case
    return without_timing(simulate(fabric, traffic, params, load).to_json())


def main() -> None:
    out = {name: run_case(c) for name, c in cases().items()}
    REFERENCE.write_text(json.dumps(out, sort_keys=True) + "\n")
    print(f"wrote {REFERENCE}: {len(out)} cases")


if __name__ == "__main__":
    main()
