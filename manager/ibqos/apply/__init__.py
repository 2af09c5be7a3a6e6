"""`ibqos apply`: put a plan on a running OpenSM, verify it, roll back on failure."""
