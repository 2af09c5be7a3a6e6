"""`ibqos apply` composed: the steps of `ibqos.apply` (config set, journal, lock, OpenSM control,
validation) run in order with rollback (run.py), and the recovery of an apply cut short
(recover.py)."""
