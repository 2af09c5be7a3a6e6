"""Reproductions of the seed papers' experiments on real OpenSM + the simulator."""
