"""One array task: `python -m ibqos_sim.slurm.task JOBDIR INDEX` simulates point INDEX of the
sweep in JOBDIR and writes its result there. A failure leaves no result and a traceback in the
task's log, which the merge names."""

from __future__ import annotations

import sys
from pathlib import Path

from ibqos.fabric.model import Fabric

from ..sim.points import run_points
from . import jobdir


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[1].isdigit():
        print("usage: python -m ibqos_sim.slurm.task JOBDIR INDEX", file=sys.stderr)
        return 2
    root, i = Path(argv[0]), int(argv[1])
    files, points, _ = jobdir.read(root)
    p = points[i]
    (res,) = run_points({p.fabric: Fabric.load(files[p.fabric])}, [p], jobs=1)
    jobdir.write_result(root, i, res)
    print(f"point {i}: load {p.load}, {res.status}, accepted {res.accepted_pct}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
