"""The orchestration layer: what composes the stages into a command. `ibqos_app.dryrun` (the dry
run: ibsim + OpenSM + every stage of `ibqos` and `ibqos_sim`), `ibqos_app.apply` (apply and its
recovery: the stages of `ibqos.apply` in order) and `ibqos_app.cli` (every `ibqos` command).
Nothing below imports it (manager/tests/test_import_layers.py)."""
