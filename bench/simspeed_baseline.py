"""Runs the reference commit's own `ibqos_sim.sim.bench` (its Python and its core) on a
fabric model: `python simspeed_baseline.py TREE ARGS...`.

The core at issue 25's reference commit shares structs with a binding of its own age only
(its results struct is not a prefix of today's), so it is measured through that commit's
binding. This venv's editable install puts today's packages ahead of sys.path through an
import finder; that finder is dropped so TREE's copy is the one imported."""

import runpy
import sys

tree = sys.argv[1]
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
sys.path[:0] = [f"{tree}/ci-sim", f"{tree}/manager"]
sys.argv = ["ibqos_sim.sim.bench", *sys.argv[2:]]
runpy.run_module("ibqos_sim.sim.bench", run_name="__main__", alter_sys=True)
