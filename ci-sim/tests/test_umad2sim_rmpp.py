"""Multi-segment (RMPP) SA answers on ibsim: the libumad2sim build.sh builds with
0007-umad2sim-rmpp-segments.patch segments what OpenSM's SA writes and reassembles it at the
client, as the kernel's MAD layer does. Debian's libumad2sim0 sent the first 256 bytes of an
answer and dropped the rest, so `saquery -g` listed 3 groups of 9 (docs/ibsim.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ibqos import paths
from ibqos.proc import run_command
from ibqos_sim.harness import Harness
from ibqos_sim.harness.diags import saquery_ipoib_broadcast_sls
from ibqos_sim.harness.ibsim_binary import patched_skip_reason
from ibqos_sim.harness.topology import fat_tree

pytestmark = pytest.mark.fabric

SKIP = patched_skip_reason()
needs_patched = pytest.mark.skipif(SKIP is not None, reason=SKIP or "")

# the Default partition and eight more, each with its broadcast group on its own SL
PARTITIONS = "Default=0x7fff, ipoib, sl=0 : ALL=full ;\n" + "".join(
    f"p{i}=0x0a0{i}, ipoib, sl={i} : ALL=full ;\n" for i in range(1, 9)
)
# opensm-sa.dump's line of a group OpenSM made: its MGID's P_Key and the SL in sl_flow_hop
_DUMPED = re.compile(r"mgid=0xff12401b([0-9a-f]{4})0000:0x00000000ffffffff .* sl_flow_hop=0x([0-9a-f])")


def _dumped_broadcast_sls(dumps: Path) -> dict[int, int]:
    out = {}
    for line in (dumps / "opensm-sa.dump").read_text().splitlines():
        if line.startswith("MC Group") and (m := _DUMPED.search(line)):
            out[int(m[1], 16) & 0x7FFF] = int(m[2], 16)
    return out


@pytest.mark.parametrize("ibsim", ["debian", "patched"])
@needs_patched
def test_saquery_lists_every_group_and_node_opensm_has(tmp_path, monkeypatch, ibsim):
    """Nine IPoIB broadcast groups in OpenSM's SA (its opensm-sa.dump), SLs 0-8. Before,
    `saquery -g` listed 3 of them (P_Keys 0x0a01-0x0a03: the 200 bytes of the first segment
    hold three 56-byte MCMemberRecords) and `saquery -N` 1 NodeRecord of 3, on either ibsim.
    Now all nine with their SLs and all three nodes; with IBQOS_UMAD2SIM=debian (Debian's
    libumad2sim0, to check the test) the first three only."""
    part = tmp_path / "p.conf"
    part.write_text(PARTITIONS)
    net = fat_tree(leaves=1, spines=0, hosts=2).write_net(tmp_path / "f.net")
    with Harness(net, run_dir=tmp_path / "h", ibsim=ibsim) as h:
        sm = h.start_sm(engine="minhop", conf={"qos": "TRUE", "partition_config_file": str(part)})
        dumped = _dumped_broadcast_sls(sm.dumps)
        assert dumped == {0x7FFF: 0, **{0x0A00 + i: i for i in range(1, 9)}}, dumped
        assert saquery_ipoib_broadcast_sls(h.env, tmp_path) == dumped
        nodes = run_command(["saquery", "-N"], env=h.env, cwd=tmp_path, timeout=60).stdout
        assert len(re.findall(r"NodeRecord dump", nodes)) == 3, nodes
        assert paths.umad2sim_lib().parent.name == paths.IBSIM_PATCHED_DIR

        monkeypatch.setenv("IBQOS_UMAD2SIM", "debian")  # the SM keeps the patched library
        assert saquery_ipoib_broadcast_sls(h.env, tmp_path) == {0x0A01: 1, 0x0A02: 2, 0x0A03: 3}


@needs_patched
def test_an_answer_of_thousands_of_segments_arrives_whole(tmp_path):
    """`saquery -p` on a 140-node fat tree: a PathRecord for every pair of the 140 LIDs, 19 600
    records of 64 bytes, 6 272 segments written at once by the SA's process and reassembled by
    saquery's. Before, 3 records (the first segment)."""
    net = fat_tree(leaves=8, spines=4, hosts=16).write_net(tmp_path / "f.net")
    with Harness(net, run_dir=tmp_path / "h", ibsim="patched") as h:
        h.start_sm(engine="minhop")
        out = run_command(["saquery", "-p"], env=h.env, cwd=tmp_path, timeout=120).stdout
    pairs = re.findall(r"dlid\.+(\d+)\s+slid\.+(\d+)", out)
    assert len(pairs) == 140 * 140 and len(set(pairs)) == len(pairs), len(pairs)
