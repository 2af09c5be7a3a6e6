"""The ibsim harness, a library: fabrics as ibsim net files (topology, wiring, netfile), which
ibsim runs them (ibsim_binary), one fabric with real OpenSM on it (fabric: Harness), waiting for
a re-sweep (resweep) and the infiniband-diags cross-check (diags). It sits beside the simulator
(ibqos_sim.sim), above the core: the dry run and the experiments compose it, and the tests reach
it through the root conftest.py's fixtures (`ibsim_fabric`)."""

from .fabric import (
    BUILTIN_ENGINES,
    PLUGIN_ENGINES,
    AttachedProcess,
    Harness,
    SmDaemon,
    SmRun,
    check_sm_run,
    engine_chain,
    net_port_types,
    sm_node_name,
    sock_prefix_for,
    stop_found,
)

__all__ = [
    "BUILTIN_ENGINES",
    "PLUGIN_ENGINES",
    "AttachedProcess",
    "Harness",
    "SmDaemon",
    "SmRun",
    "check_sm_run",
    "engine_chain",
    "net_port_types",
    "sm_node_name",
    "sock_prefix_for",
    "stop_found",
]
