"""ibsim fabrics with real OpenSM (harness), the packet-level simulator (sim, slurm), and the
experiments that compose them (campaign, compare_engines, paper, sweeprun). The dry run and the
commands that drive these are ibqos_app's."""
