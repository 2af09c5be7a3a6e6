"""`ibqos dryrun`: policy → plan → render → ibsim + OpenSM + dla → read back → conform →
verify → simulate → per-SLA verdict, with report.json and report.html."""

from .pipeline import STAGES, DryRun, DryRunConfig

__all__ = ["STAGES", "DryRun", "DryRunConfig"]
