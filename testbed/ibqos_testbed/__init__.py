"""ibqos testbed: validate a plan on hardware with perftest (seed 002 section 4 method)."""
