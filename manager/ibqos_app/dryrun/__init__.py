"""`ibqos dryrun`: policy → plan → render → ibsim + OpenSM + dla → read back → conform →
verify → simulate → per-SLA verdict, with report.json and report.html.

The orchestration layer: the one package that composes the stages of `ibqos` (plan, render,
verify) and `ibqos_sim` (the ibsim harness, the simulator); neither imports it."""

from .pipeline import STAGES, DryRun, DryRunConfig

__all__ = ["STAGES", "DryRun", "DryRunConfig"]
