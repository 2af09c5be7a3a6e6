"""Admin-pinned groups (`group GUID LABEL`, `group_pattern REGEX` in the table file): dla routes
on them when they are usable and says so; pins that do not fit the fabric get one ERR line and
dla routes on the groups it finds instead; OpenSM keeps running either way."""

from __future__ import annotations

import re

import pytest
from dla_testlib import refusals, run_dla
from ibqos.fabric.dumps import load_dumps
from ibqos.verify import verify_fabric
from ibqos_sim.harness import Harness
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly

pytestmark = pytest.mark.fabric

GROUPS_LINE = re.compile(r"dla: (\d+) groups \(([^)]*)\)")


def run_with(tmp_path, tables: str, *, check: bool = True):
    topo = dragonfly(*DRAGONFLY_SIZES[72])
    net = topo.write_net(tmp_path / "fabric.net")
    path = tmp_path / "plan.tables"
    path.write_text("version 1\n" + tables)
    with Harness(net, run_dir=tmp_path / "run") as h:
        run = run_dla(h, tables=path, check=check)
    lines = run.lines()
    sources = [(int(m.group(1)), m.group(2)) for ln in lines if (m := GROUPS_LINE.search(ln.text))]
    report = verify_fabric(load_dumps(run.dumps))
    assert report.ok and report.cdg_acyclic, report.defects()
    assert report.delivered == report.pairs == 72 * 71
    assert not refusals(lines)
    return lines, sources[-1]


def test_pattern_pins_groups(tmp_path):
    lines, (ngroups, source) = run_with(tmp_path, r"group_pattern ^sw-g(?<group>\d+)-s\d+$" "\n")
    assert (ngroups, source) == (9, "pinned by the table file")
    assert not any("ERR D1A" in ln.text for ln in lines)


def test_guid_pins_win_over_the_pattern(tmp_path, ibsim_fabric):
    # the pattern alone would make groups by switch index (not cliques: ignored); GUID pins
    # for every switch put them back in their real groups (GUIDs as ibsim gave them)
    topo = dragonfly(*DRAGONFLY_SIZES[72])
    net = topo.write_net(tmp_path / "probe.net")
    with ibsim_fabric(net, run_dir=tmp_path / "probe") as h:
        fabric = load_dumps(run_dla(h).dumps)
    name_group = re.compile(r"sw-g(\d+)-")
    pins = "".join(f"group 0x{n.guid:016x} g{name_group.match(n.desc).group(1)}\n" for n in fabric.switches())
    _, (ngroups, source) = run_with(tmp_path, r"group_pattern ^sw-g\d+-s(?<group>\d+)$" "\n" + pins)
    assert (ngroups, source) == (9, "pinned by the table file")


def test_pins_that_do_not_fit_are_ignored_with_one_error(tmp_path):
    # groups by switch index: 4 groups of 9 switches that are far from cliques
    lines, (ngroups, source) = run_with(tmp_path, r"group_pattern ^sw-g\d+-s(?<group>\d+)$" "\n", check=False)
    errs = [ln.text for ln in lines if "ERR D1A7" in ln.text]
    assert errs and all(
        "dla: group pins ignored: group " in e and "more than two local hops apart" in e for e in errs
    ), errs
    assert (ngroups, source) == (9, "discovered")
