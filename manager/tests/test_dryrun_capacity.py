"""Which plan the dry run judges (ibqos_app.dryrun.capacity), on a model whose ports hold different
VLArb capacities, as a real fabric's can (the ibsims give every port the same)."""

from __future__ import annotations

from ibqos.arbiter import ArbTable
from ibqos.fabric.model import Fabric, Node, Port
from ibqos_app.dryrun.capacity import read_capacity


def _fabric() -> Fabric:
    """One switch with two CAs (16/32-entry ports) on 64/64-entry switch ports, and one
    unlinked 8/8 switch port, which carries nothing and so does not count."""
    f = Fabric(source="test:mixed")
    sw = Node(guid=0x100, kind="switch", desc="sw0", nports=3)
    sw.ports[0] = Port(num=0, guid=0x100, lid=1)
    f.nodes[sw.guid] = sw
    for i in range(2):
        ca = Node(guid=0x200 + i, kind="ca", desc=f"ca{i}", nports=1)
        ca.ports[1] = Port(num=1, remote=(sw.guid, i + 1), vlarb=ArbTable(high_cap=16, low_cap=32))
        sw.ports[i + 1] = Port(num=i + 1, remote=(ca.guid, 1), vlarb=ArbTable(high_cap=64, low_cap=64))
        f.nodes[ca.guid] = ca
    sw.ports[3] = Port(num=3, vlarb=ArbTable(high_cap=8, low_cap=8))
    return f


def test_ports_below_the_policy_are_named_and_refuse_unless_fitted():
    cap = read_capacity(_fabric(), (32, 32), fit=False)
    assert (cap.fabric, cap.ports, cap.below) == ((16, 32), 4, ("ca0[1] 16/32", "ca1[1] 16/32"))
    assert not cap.fits and not cap.fitted and cap.plan_cap == (32, 32)
    assert cap.refusal() == (
        "the policy asks 32/32 VLArb entries, the fabric's ports hold 16/32: 2 of 4 ports below it "
        "(ca0[1] 16/32, ca1[1] 16/32); a plan for 32/32 is not what these ports can run. "
        "--fit-to-fabric judges a plan fitted to 16/32 instead"
    )
    fitted = read_capacity(_fabric(), (32, 32), fit=True)
    assert fitted.fitted and fitted.plan_cap == (16, 32)
    assert fitted.to_json((16, 32))["judged"] == "fitted"
    assert fitted.describe((16, 32)) == (
        "fitted plan 16/32 (--fit-to-fabric), not the policy's 32/32: the fabric's 4 ports hold 16/32"
    )


def test_a_policy_within_every_port_is_its_own_plan_even_when_fitting_is_allowed():
    cap = read_capacity(_fabric(), (16, 16), fit=True)
    assert cap.fits and not cap.fitted and cap.plan_cap == (16, 16) and cap.below == ()
    assert cap.to_json((16, 16))["judged"] == "policy"
    assert cap.describe((16, 16)) == "the policy's plan 16/16; the fabric's 4 ports hold 16/32"


def test_a_plan_for_more_data_vls_than_the_ports_run_is_refused_before_opensm(ibqos_cli, tmp_path):
    """15 data VLs on ports whose VLCap is 8 (ibsim's, and many HCAs'): the dla plugin refused
    its table file inside OpenSM (ERR D1A3) and the run ended as an external failure (exit 3);
    now it is refused before OpenSM runs, naming the policy's line and the ports, as a VLArb
    capacity below the policy's is."""
    from ibqos.paths import REPO_ROOT

    policy = tmp_path / "vl15.yaml"
    text = (REPO_ROOT / "examples" / "two-class.yaml").read_text()
    assert "data_vls: 8" in text
    policy.write_text(text.replace("data_vls: 8", "data_vls: 15"))
    out = tmp_path / "dr"
    r = ibqos_cli("dryrun", policy, "--topology", "fattree:leaves=1,spines=0,hosts=2", "--out", out, timeout=300)
    line = text[: text.index("data_vls: 8")].count("\n") + 1
    assert r.returncode == 1, r.stderr[-1500:]
    assert (
        f"ibqos: error: dry run refused: {policy}:{line}: fabric.data_vls: the plan runs 15 data VLs, 4 of the "
        "fabric's ports fewer (ca-l0-h0[1] VLCap 8, ca-l0-h1[1] VLCap 8, leaf0[1] VLCap 8, …)" in r.stderr
    ), r.stderr
    assert not (out / "fabric" / "sm0").exists()  # OpenSM never ran
