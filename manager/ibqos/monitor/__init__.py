"""`ibqos monitor`: is each class getting its share on the live fabric, link by link.

counters: the sampler's per-port PMA counters (one sample) and the arithmetic between two
(32-bit wrap, resets). judge: per link and direction, each class's share and rate, the link's
utilisation and the wait per VL, held against the plan. export: the Prometheus metrics.
"""
