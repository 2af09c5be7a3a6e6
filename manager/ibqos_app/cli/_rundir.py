"""What a run directory carries besides the fabric: the plan it was made with."""

from __future__ import annotations

from pathlib import Path


def plan_beside(rundir: Path) -> Path | None:
    """plan.json in RUNDIR (a dry-run directory), or in a directory above RUNDIR's dumps. A
    RUNDIR that is not there has none (a plan.json in the current directory is no run's)."""
    if not rundir.exists():
        return None
    d = rundir if rundir.is_dir() else rundir.parent
    for cand in [d, *list(d.parents)[:3]]:
        if (cand / "plan.json").is_file():
            return cand / "plan.json"
    return None
