"""ibqos dry run: ibsim fabrics configured by real OpenSM, and the packet-level simulator."""
