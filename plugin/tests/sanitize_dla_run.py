"""`make test-sanitize`'s OpenSM part (not collected by `make test`; run by path): the ASan/UBSan
build of libibqos.so from IBQOS_BUILD_DIR inside the stock OpenSM, one dla run on the 72-CA
dragonfly with a table file using every directive, then one with a rejected file (the error
path frees what it parsed); and the 72-CA fault campaign (every single link and switch, 20
double faults) on a daemon OpenSM with the sanitized plugin. Any sanitizer report fails."""

from __future__ import annotations

import re

import pytest
from dla_testlib import ENGINE, TABLES_REJECTED, start_dla
from ibqos import paths
from ibqos.render.fallback import DLA_CHAIN, fallback_options
from ibqos_sim.campaign import Campaign, double_faults, single_faults
from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly
from test_dla_memcheck import _libasan, _PreloadHarness

pytestmark = pytest.mark.fabric

TABLES = """version 1
vls_per_class 2
sl2class 0,1,2,3,0,0,0,0,0,0,0,0,0,0,0,0
vlarb ca high 0:40,1:40 low 2:8,3:8 limit 2
vlarb global high 0:40,1:40 low 2:8,3:8,4:0 limit 2
vlarb local high 0:0 low 2:8,3:8 limit 2
group 0x0002c903000a1b2c g1
group_pattern ^sw-g(?<group>\\d+)-s\\d+$
"""


def _sanitized_build() -> None:
    cache = (paths.build_dir() / "CMakeCache.txt").read_text()
    if not re.search(r"^IBQOS_SANITIZE:BOOL=ON$", cache, re.M):
        pytest.fail(f"{paths.build_dir()} is not an IBQOS_SANITIZE=ON build (make test-sanitize)")


def _sanitized_harness(tmp_path, net, **kw) -> tuple[_PreloadHarness, object]:
    reports = tmp_path / "san"
    reports.mkdir()
    supp = tmp_path / "asan.supp"
    supp.write_text(
        "interceptor_via_lib:libumad2sim.so\ninterceptor_via_lib:libibumad.so\ninterceptor_via_lib:libosmvendor.so\n"
    )
    h = _PreloadHarness(net, run_dir=tmp_path / "run", **kw)
    h.preload = _libasan()
    h.extra_env = {
        "ASAN_OPTIONS": f"detect_leaks=0:suppressions={supp}:log_path={reports}/asan",
        "UBSAN_OPTIONS": f"print_stacktrace=1:halt_on_error=1:log_path={reports}/ubsan",
    }
    return h, reports


def test_sanitized_plugin_through_the_fault_campaign(tmp_path):
    _sanitized_build()
    topo = dragonfly(*DRAGONFLY_SIZES[72])
    net = topo.write_net(tmp_path / "fabric.net")
    h, reports = _sanitized_harness(tmp_path, net, console=True)
    with h:
        sm = start_dla(h, engine=DLA_CHAIN, conf={"sweep_interval": 1, **fallback_options(8)})
        c = Campaign(h, sm, topo, tmp_path)
        faults, _ = single_faults(topo)
        outcomes = [c.run([f]) for f in faults]
        outcomes += [c.run(list(p)) for p in double_faults(topo, 20, seed=82)]
        out = (sm.log.parent / "opensm.out").read_text()
    assert len(outcomes) == len(faults) + 20
    assert all(o.survived for o in outcomes), [o.name for o in outcomes if not o.survived][:10]
    assert not list(reports.iterdir()), [p.read_text()[:2000] for p in reports.iterdir()]
    assert "runtime error" not in out


def test_sanitized_plugin_dla_run(tmp_path):
    _sanitized_build()
    net = dragonfly(*DRAGONFLY_SIZES[72]).write_net(tmp_path / "fabric.net")
    h, reports = _sanitized_harness(tmp_path, net)
    good = tmp_path / "plan.tables"
    good.write_text(TABLES)
    bad = tmp_path / "bad.tables"
    bad.write_bytes(TABLES.encode() + b"group 0x0002c903000a1b2c g2\n")
    with h:
        run = h.run_sm(engine=ENGINE, plugin=True, plugin_options=good, conf={"qos": "TRUE"}, check=False)
        assert run.configured_engines() == ["dla"]
        assert not [ln.text for ln in run.lines() if TABLES_REJECTED.search(ln.text)]
        rejected = h.run_sm(engine=ENGINE, plugin=True, plugin_options=bad, conf={"qos": "TRUE"}, check=False)
        found = [m.group(1) for ln in rejected.lines() if (m := TABLES_REJECTED.search(ln.text))]
        assert found == [f"{bad}:9: group: switch 0x0002c903000a1b2c pinned twice (first on line 7)"]
        assert rejected.configured_engines() == ["dla"]
    assert not list(reports.iterdir()), [p.read_text()[:2000] for p in reports.iterdir()]
    for r in (run, rejected):
        assert "runtime error" not in (r.log.parent / "opensm.out").read_text()


def test_sanitized_plugin_on_a_spoilt_group_map_and_record_name(tmp_path):
    """The group map's reader and writer and the record's writer on what a spoilt cache or
    dump directory holds (test_dla_group_map_file.py, test_dla_record_file.py): a NUL byte and
    a switch listed twice in the map, a link at its temporary name, a directory at the record's
    name. Each said in its one line, dla routes, no sanitizer report."""
    _sanitized_build()
    net = dragonfly(4, 2, 2).write_net(tmp_path / "fabric.net")
    h, reports = _sanitized_harness(tmp_path, net)
    group_map = "ibqos-dla-groups"  # dla_groupmap.h
    with h:
        first = h.run_sm(engine=ENGINE, plugin=True, conf={"qos": "TRUE"}, name="sm0", check=False)
        good = (h.run_dir / group_map).read_bytes()
        runs = [first]
        for name, spoilt in (("sm1", good.replace(b" ", b"\0", 5)), ("sm2", good + good.splitlines(True)[2])):
            (h.run_dir / group_map).write_bytes(spoilt)
            (h.run_dir / f"{group_map}.tmp").symlink_to(tmp_path / "victim")
            (h.run_dir / name / "dumps" / "ibqos-dla.json").mkdir(parents=True)
            runs.append(h.run_sm(engine=ENGINE, plugin=True, conf={"qos": "TRUE"}, name=name, check=False))
            assert not (tmp_path / "victim").exists() and not (h.run_dir / f"{group_map}.tmp").is_symlink()
            assert (h.run_dir / group_map).read_bytes() == good
    said = [[ln.text for ln in r.lines() if "group map not read" in ln.text or "D1A8" in ln.text] for r in runs[1:]]
    assert [len(s) for s in said] == [2, 2], said
    assert all(sum("D1A8" in t for t in s) == 1 for s in said), said
    assert "NUL byte in column" in said[0][1] and "is listed twice (first on line 3)" in said[1][1], said
    assert all(r.configured_engines() == ["dla"] for r in runs)
    assert not list(reports.iterdir()), [p.read_text()[:2000] for p in reports.iterdir()]
    for r in runs:
        assert "runtime error" not in (r.log.parent / "opensm.out").read_text()
