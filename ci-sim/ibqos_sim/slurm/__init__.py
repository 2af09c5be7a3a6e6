"""Sweeps as Slurm job arrays: one array task per point (jobdir: the files a task reads and
writes; sbatch: submit and wait, through ibqos.proc; task: what a task runs)."""
