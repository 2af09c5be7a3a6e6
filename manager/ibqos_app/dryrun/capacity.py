"""Which plan the dry run judges. The policy's VLArb capacity (fabric.vlarb_cap, what the
production switches hold) is compared with what the simulated fabric's ports report
(PortInfo VLArbitrationHighCap/LowCap, read back before OpenSM runs). The dry run never fits
the plan silently: a fabric below the policy refuses the run, naming both capacities and the
ports, unless the admin asks for a plan fitted to the fabric (`--fit-to-fabric`); the report
then says it judged the fitted plan, not the policy's."""

from __future__ import annotations

from dataclasses import dataclass

from ibqos.fabric.model import Fabric

FIT_OPTION = "--fit-to-fabric"
SHOWN_PORTS = 3  # ports named in a refusal; the count says how many more


def _cap(c: tuple[int, int]) -> str:
    return f"{c[0]}/{c[1]}"


@dataclass(frozen=True)
class Capacity:
    policy: tuple[int, int]  # fabric.vlarb_cap: (high, low) entries
    fabric: tuple[int, int]  # the fewest entries any port holds, per table
    ports: int  # ports read: every linked port with VLArb (CA ports, switch external ports)
    below: tuple[str, ...]  # "node[port] h/l" of each port holding fewer than the policy asks
    fit: bool  # the admin asked for a plan fitted to the fabric
    plan_given: bool = False  # `policy` is the capacity of the admin's plan, judged as it is

    @property
    def fits(self) -> bool:
        return not self.below

    @property
    def fitted(self) -> bool:
        """The plan judged is fitted to the fabric, not the policy's own."""
        return self.fit and not self.fits

    @property
    def plan_cap(self) -> tuple[int, int]:
        """The capacity the judged plan is made for."""
        return self.fitted_cap if self.fitted else self.policy

    @property
    def fitted_cap(self) -> tuple[int, int]:
        """The policy's capacity cut to the fabric's, per table."""
        return (min(self.policy[0], self.fabric[0]), min(self.policy[1], self.fabric[1]))

    def refusal(self) -> str:
        shown = ", ".join(self.below[:SHOWN_PORTS])
        more = len(self.below) - SHOWN_PORTS
        fit = (
            f"plan the policy for {_cap(self.fitted_cap)}, or dry-run the policy with {FIT_OPTION}"
            if self.plan_given
            else f"{FIT_OPTION} judges a plan fitted to {_cap(self.fitted_cap)} instead"
        )
        return (
            f"the {'plan' if self.plan_given else 'policy'} asks {_cap(self.policy)} VLArb entries, the fabric's "
            f"ports hold {_cap(self.fabric)}: {len(self.below)} of {self.ports} ports below it "
            f"({shown}{f' and {more} more' if more > 0 else ''}); a plan for {_cap(self.policy)} is not "
            f"what these ports can run. {fit}"
        )

    def describe(self, planned: tuple[int, int]) -> str:
        """Which plan was judged, for the report's fabric checks and the terminal verdict."""
        entries = "" if planned == self.plan_cap else f", {_cap(planned)} entries programmable by OpenSM 3.3.23"
        if self.fitted:
            return (
                f"fitted plan {_cap(self.plan_cap)}{entries} ({FIT_OPTION}), not the policy's "
                f"{_cap(self.policy)}: the fabric's {self.ports} ports hold {_cap(self.fabric)}"
            )
        held = f"the fabric's {self.ports} ports hold {_cap(self.fabric)}"
        whose = "the plan as given" if self.plan_given else "the policy's plan"
        return f"{whose} {_cap(self.policy)}{entries}; {held}"

    def to_json(self, planned: tuple[int, int]) -> dict:
        return {
            "judged": "fitted" if self.fitted else "plan" if self.plan_given else "policy",
            "policy": list(self.policy),
            "fabric": list(self.fabric),
            "plan": list(self.plan_cap),
            "planned_entries": list(planned),
            "ports": self.ports,
            "ports_below_policy": list(self.below),
            "fit_to_fabric": self.fit,
        }


def read_capacity(fabric: Fabric, policy: tuple[int, int], fit: bool, plan_given: bool = False) -> Capacity:
    """The ports' capacity against the policy's, or the given plan's (`fabric` a read-back
    model: every port with VLArb carries its high_cap/low_cap)."""
    caps = [
        (f"{n.desc}[{p}]", (v.high_cap, v.low_cap))
        for n in sorted(fabric.nodes.values(), key=lambda n: n.desc)
        for p, port in sorted(n.ports.items())
        if (v := port.vlarb) is not None and port.remote is not None  # an unlinked port carries nothing
    ]
    if not caps:
        raise ValueError(f"{fabric.source}: no port reports a VLArb capacity")  # a bug: ibsim ports all do
    below = tuple(f"{name} {_cap(c)}" for name, c in caps if c[0] < policy[0] or c[1] < policy[1])
    low = (min(c[0] for _, c in caps), min(c[1] for _, c in caps))
    return Capacity(policy=policy, fabric=low, ports=len(caps), below=below, fit=fit, plan_given=plan_given)
