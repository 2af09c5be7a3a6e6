"""The ibstat parser of ibqos.fabric.local_port on a dual-rail host's output (two CAs, the
first port Down), which umad2sim (one CA, one port) cannot produce: each port's CA, number and
GUID, in ibstat's order, and the port OpenSM binds when told none (the first not Down)."""

from __future__ import annotations

from ibqos.fabric.local_port import bound_by_default, parse_ibstat

# `ibstat` on a Debian 12 SM host with two ConnectX-6 (infiniband-diags 44), one per rail
DUAL_RAIL = """CA 'mlx5_0'
	CA type: MT4123
	Number of ports: 1
	Firmware version: 20.31.1014
	Hardware version: 0
	Node GUID: 0x0002c903000a1234
	System image GUID: 0x0002c903000a1234
	Port 1:
		State: Down
		Physical state: Polling
		Rate: 10
		Base lid: 65535
		LMC: 0
		SM lid: 0
		Capability mask: 0x2651e84a
		Port GUID: 0x0002c903000a1234
		Link layer: InfiniBand
CA 'mlx5_1'
	CA type: MT4123
	Number of ports: 1
	Firmware version: 20.31.1014
	Hardware version: 0
	Node GUID: 0x0002c903000a5678
	System image GUID: 0x0002c903000a5678
	Port 1:
		State: Active
		Physical state: LinkUp
		Rate: 200
		Base lid: 1
		LMC: 0
		SM lid: 1
		Capability mask: 0x2651e84a
		Port GUID: 0x0002c903000a5678
		Link layer: InfiniBand
"""


def test_each_port_of_each_ca_with_its_guid_and_link_state():
    got = [(p.ca, p.port, p.guid, p.up) for p in parse_ibstat(DUAL_RAIL)]
    assert got == [("mlx5_0", 1, 0x0002C903000A1234, False), ("mlx5_1", 1, 0x0002C903000A5678, True)]
    assert [p.diag_args() for p in parse_ibstat(DUAL_RAIL)] == [
        ["-C", "mlx5_0", "-P", "1"],
        ["-C", "mlx5_1", "-P", "1"],
    ]


def test_a_two_port_ca_numbers_its_ports():
    text = DUAL_RAIL.split("CA 'mlx5_1'")[0] + "\tPort 2:\n\t\tState: Active\n\t\tPort GUID: 0x0002c903000a1235\n"
    assert [(p.ca, p.port, p.guid) for p in parse_ibstat(text)] == [
        ("mlx5_0", 1, 0x0002C903000A1234),
        ("mlx5_0", 2, 0x0002C903000A1235),
    ]


def test_told_no_port_opensm_binds_the_first_that_is_not_down():
    assert str(bound_by_default(parse_ibstat(DUAL_RAIL))) == "0x0002c903000a5678 (mlx5_1 port 1)"
    all_down = DUAL_RAIL.replace("State: Active", "State: Down")
    assert str(bound_by_default(parse_ibstat(all_down))) == "0x0002c903000a1234 (mlx5_0 port 1)"
