"""The simulator core's ABI is checked when the library loads, and its -errno returns become
typed errors (the model's fault InputError, out of memory MemoryError, anything else an
ExternalError naming the errno), on the real libibqos_sim.so."""

from __future__ import annotations

import errno

import pytest
from ibqos.errors import ExternalError, InputError
from ibqos_sim.sim import SimParams, Simulation, TrafficSpec, _core, compile_network
from ibqos_sim.sim.run import core_error
from simfabrics import dragonfly_dla


def test_the_core_built_here_has_the_abi_the_mirror_was_written_for():
    lib = _core.load()
    assert lib.ibs_version().decode() == _core.ABI


def test_a_core_of_another_abi_is_refused_at_load(monkeypatch):
    have = _core.load().ibs_version().decode()
    monkeypatch.delenv("IBQOS_SIM_ACCEPT_ABI", raising=False)
    monkeypatch.setattr(_core, "ABI", "ibqos-sim 999")  # this ibqos mirrors other structs
    load = _core.load.__wrapped__  # load() is cached for the process: check afresh
    with pytest.raises(ExternalError, match=f"is '{have}', this ibqos needs 'ibqos-sim 999'.*make build"):
        load()
    monkeypatch.setenv("IBQOS_SIM_ACCEPT_ABI", have)  # an older prefix-compatible core, named
    assert load().ibs_version().decode() == have


def test_a_model_the_core_rejects_is_an_input_error_naming_the_core_reason():
    net = compile_network(dragonfly_dla(vls=2), rate_gbps=32)
    net.arrays["sl2vl_rows"][3] = 16  # past the Python checks: only the core's own stands
    params = SimParams(time_us=5, warmup_us=1)
    with pytest.raises(InputError, match=r"simulator rejects the model: sl2vl row 0: VL 16 above 15"):
        Simulation(net, TrafficSpec(pattern="uniform", msg_bytes=4096), params, 0.5)


@pytest.mark.parametrize(
    "rc, kind, words",
    [
        (-errno.ENOMEM, MemoryError, "ibs_run: the simulator core ran out of memory"),
        (-errno.EIO, ExternalError, "ibs_run failed with EIO"),
        (-errno.ERANGE, ExternalError, "ibs_run failed with ERANGE"),
    ],
)
def test_core_errnos_map_to_typed_errors(rc, kind, words):
    e = core_error(rc, "ibs_run")
    assert type(e) is kind and words in str(e)
