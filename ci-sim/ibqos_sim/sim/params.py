"""Simulation parameters and their defaults (seed 003 §5: QDR, 4 KB MTU, 16 packets per VL)."""

from __future__ import annotations

from typing import Literal

from ibqos.arbiter.rates import rate_gbps as parse_rate
from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_SIM_US = 1_000_000.0


class SimParams(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    rate: str | float = "QDR"  # every link: QDR 32, FDR 56, EDR 100, HDR 200 Gb/s, or Gb/s
    mtu: int = Field(4096, ge=64, le=65535)  # bytes per packet (the largest)
    buffer_packets: int = Field(16, ge=1, le=1024)  # input buffer per (port, VL), in MTU packets
    prop_ns: float = Field(10.0, ge=0)  # link propagation delay (about 2 m of cable)
    switch_ns: float = Field(100.0, ge=0)  # head arrival to earliest forwarding
    voq: bool = True  # virtual output queues at switch inputs
    # packets a switch input feeds through the crossbar at once: "N" one per queue (VL, or
    # VOQ), 1 one at a time, its buffer read at link rate (docs/simulator.md, "Switch model")
    input_reads: Literal["N", 1] = "N"
    # with VOQ: "shared" the queues of an (input, VL) share its buffer and the VL's credits (IB
    # flow control); "per-output" every queue has buffer_packets of its own and the sender
    # keeps credits per (VL, next switch's output): route-aware credits (docs/simulator.md)
    voq_buffers: Literal["shared", "per-output"] = "shared"
    accounting: Literal["byte", "packet"] = "byte"  # docs/arbiter.md
    seed: int = Field(1, ge=0)
    # At most 1 s of simulated time each: a 72-CA dragonfly at full load simulates about 10 ms
    # per CPU second, so 1 s is minutes; 1e12 µs would be years, and is refused, not started.
    warmup_us: float = Field(100.0, ge=0, le=MAX_SIM_US)
    time_us: float = Field(500.0, gt=0, le=MAX_SIM_US)  # measured window after the warm-up
    deadlock_us: float = Field(50.0, gt=0)  # no packet moved on a waiting VL this long: deadlock
    evq: Literal["calendar", "heap", "list"] = "calendar"  # event queue implementation

    @field_validator("rate")
    @classmethod
    def _rate(cls, v):
        parse_rate(v)
        return v

    @property
    def rate_gbps(self) -> float:
        return parse_rate(self.rate)

    @property
    def buffer_credits(self) -> int:
        return self.buffer_packets * ((self.mtu + 63) // 64)
