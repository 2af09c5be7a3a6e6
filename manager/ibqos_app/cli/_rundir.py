"""What a run directory carries besides the fabric: the plan it was made with."""

from __future__ import annotations

import os
from pathlib import Path


def plan_beside(rundir: Path) -> Path | None:
    """plan.json in RUNDIR (a dry-run directory), or in a directory above RUNDIR's dumps. A
    RUNDIR that is not there has none (a plan.json in the current directory is no run's). A
    plan.json that is there but no file (a directory, a dangling link) is the run's too, and
    refused where it is read: taken for no plan, status judged SL 0 alone and said OK."""
    if not rundir.exists():
        return None
    d = rundir if rundir.is_dir() else rundir.parent
    for cand in [d, *list(d.parents)[:3]]:
        if os.path.lexists(cand / "plan.json"):
            return cand / "plan.json"
    return None
