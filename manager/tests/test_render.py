"""Renderer: file contents follow the plan and the fixed formats; real OpenSM on an ibsim
72-CA dragonfly accepts the files and programs exactly the planned tables on every port."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from ibqos import osmconf, paths
from ibqos.plan import Plan
from ibqos.planner import make_plan
from ibqos.policy import load_policy
from ibqos.proc import run_command
from ibqos.render import render_plan, render_texts
from ibqos.roles import ROLES
from tree_snapshot import changes, snapshot

ROOT = Path(__file__).resolve().parents[2]
FOUR = ROOT / "examples" / "four-class.yaml"


def _plan(path=FOUR, cap=None) -> Plan:
    return make_plan(load_policy(path), cap)


def test_plugin_table_file_follows_the_contract(tmp_path):
    plan = _plan()
    files = render_plan(plan, tmp_path / "out")
    lines = [ln for ln in files["plugin-tables.conf"].read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert lines[0] == "version 1"
    assert lines[1] == "sl2class " + ",".join(map(str, plan.sl2class))
    pat = re.compile(r"^vlarb (\w+) +high (\S+) low (\S+) limit (\d+)$")
    seen = {}
    for ln in lines[2:]:
        m = pat.match(ln)
        assert m, ln
        seen[m.group(1)] = m.groups()[1:]
    assert set(seen) == set(ROLES)
    for role, (high, low, limit) in seen.items():
        t = plan.vlarb.role(role)
        assert high == (",".join(f"{v}:{w}" for v, w in t.high) or "-")
        assert low == (",".join(f"{v}:{w}" for v, w in t.low) or "-")
        assert int(limit) == t.limit


def test_opensm_conf_and_policy_carry_the_plan(tmp_path):
    plan = _plan()
    out = tmp_path / "out"
    files = render_plan(plan, out)
    conf = dict(
        ln.split(None, 1)
        for ln in files["opensm.conf"].read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    )
    t, ca = plan.vlarb.terminal, plan.vlarb.ca
    assert conf["routing_engine"] == "dla,dfsssp,lash,nue" and conf["event_plugin_name"] == "ibqos"
    assert conf["max_op_vls"] == "4"  # the VLCap code of 8 data VLs (VL0-7), not the count
    assert conf["nue_max_num_vls"] == "8"  # nue's layers: a count, one per data VL
    assert conf["event_plugin_options"] == str(out / "plugin-tables.conf")
    assert conf["qos_policy_file"] == str(out / "qos-policy.conf")
    assert conf["qos_swe_vlarb_high"] == ",".join(f"{v}:{w}" for v, w in t.high)
    assert conf["qos_ca_vlarb_low"] == ",".join(f"{v}:{w}" for v, w in ca.low)
    assert conf["qos_ca_high_limit"] == str(ca.limit)
    # dla programs SL2VL itself; OpenSM's lines serve the fallback engines' layer SLs, one VL each.
    for key in ("qos_sl2vl", "qos_ca_sl2vl", "qos_swe_sl2vl", "qos_sw0_sl2vl", "qos_rtr_sl2vl"):
        assert [int(x) for x in conf[key].split(",")] == [0, 1, 2, 3, 4, 5, 6, 7] + [7] * 8
    pol = files["qos-policy.conf"].read_text()
    assert re.search(r"name: DEFAULT\n\s+use: .*\n\s+sl: 0\n", pol)
    # quoted: OpenSM ends an unquoted name at the space (test_netfile_real.py, on the SA)
    assert 'port-name: "storage01 HCA-1/P1"' in pol and "service-id: 0xab0000-0xabffff" in pol
    # ULPs become match rules in their class's place (OpenSM would put qos-ulps after every
    # match rule): SDP ports 5004-5005 are service IDs 0x10000 + port, iSER 0x1060000 + 3260.
    assert "\nqos-ulps" not in pol
    rules = re.findall(r"qos-match-rule\n(.*?)end-qos-match-rule", pol, re.S)
    level = [re.search(r"qos-level-name: (\S+)", r)[1] for r in rules]
    assert level == ["VO", "VI", "CL", "CL", "CL", "CL"], level
    assert "service-id: 0x1138c-0x1138d" in rules[1] and "service-id: 0x1060cbc" in rules[4]
    srp_group = re.search(r"destination: (\S+)", rules[5])[1]
    assert re.search(rf"name: {re.escape(srp_group)}\n.*\n\s+port-guid: 0x2c90300a1b2c3\n", pol)
    # node_type next to port names filters them; it is never a line of its own beside them.
    storage = re.search(r"name: storage\n(.*?)end-port-group", pol, re.S)[1]
    assert "node-type" not in storage and storage.count("port-name:") == 2


def test_without_dla_opensm_sl2vl_is_the_class_map(tmp_path):
    doc = yaml.safe_load(FOUR.read_text())
    doc["fabric"]["routing"] = "minhop"
    plan = _plan(_write(tmp_path, doc))
    conf = _conf(render_plan(plan, tmp_path / "out")["opensm.conf"])
    assert conf["routing_engine"] == "minhop" and "event_plugin_name" not in conf
    assert conf["max_op_vls"] == "4"  # the plan's 8 data VLs, with or without dla
    # SL -> VL of its class (one VL per class): BE_BK (class 3) owns SL 0 and 8 and VL 3.
    sl2vl = [int(x) for x in conf["qos_ca_sl2vl"].split(",")]
    assert sl2vl[0] == sl2vl[8] == 3 and sl2vl[1] == 0 and len(sl2vl) == 16


@pytest.mark.parametrize("engine", ["dfsssp", "lash"])
def test_a_plan_naming_an_engine_that_replaces_the_class_sl_is_not_rendered(ibqos_cli, tmp_path, engine):
    """A plan.json written before policies refused dfsssp and lash (or edited by hand) renders
    nothing: under them the class map folds the engine's layers into credit loops."""
    doc = yaml.safe_load(FOUR.read_text())
    doc["fabric"]["routing"] = "minhop"
    plan = _plan(_write(tmp_path, doc)).to_json()
    plan["fabric"]["routing"] = engine
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan, indent=1))
    cp = ibqos_cli("render", path, "-o", tmp_path / "out")
    assert cp.returncode == 2 and len(cp.stderr.splitlines()) == 1, cp.stderr
    assert cp.stderr.startswith(f"ibqos: error: {path}:") and f"fabric.routing: {engine} gives every path" in cp.stderr
    assert not (tmp_path / "out").exists()


def _write(tmp_path: Path, doc: dict) -> Path:
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _conf(path: Path) -> dict[str, str]:
    return dict(ln.split(None, 1) for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#"))


def test_render_cli_and_no_half_written_output(ibqos_cli, tmp_path):
    plan = _plan()
    plan.save(tmp_path / "plan.json")
    cp = ibqos_cli("render", tmp_path / "plan.json", "-o", tmp_path / "r", timeout=120)
    assert cp.returncode == 0, cp.stderr
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == [
        "opensm.conf",
        "plugin-tables.conf",
        "qos-policy.conf",
    ]
    # A broken plan: one error line, and nothing is created.
    bad = tmp_path / "bad.json"
    bad.write_text((tmp_path / "plan.json").read_text().replace('"high_limit": ', '"high_limit": 999'))
    cp = ibqos_cli("render", bad, "-o", tmp_path / "r2", timeout=120)
    assert cp.returncode == 2 and len(cp.stderr.splitlines()) == 1 and "Traceback" not in cp.stderr
    assert not (tmp_path / "r2").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_render_into_opensms_own_directory_keeps_its_whole_configuration(ibqos_cli, tmp_path):
    """redsm: `ibqos render PLAN -o /etc/opensm` replaced OpenSM's whole opensm.conf (`opensm -c`'s
    160-odd options, the site's sm_priority 15 among them) with the plan's 50-line fragment, exit
    0: OpenSM's next start ran on its defaults for everything else. Now one line, exit 2, nothing
    written; over a link (ibqos apply's, config management's) likewise. A directory holding an
    earlier render is still rendered over."""
    plan = _plan()
    plan.save(tmp_path / "plan.json")
    etc = tmp_path / "etc-opensm"
    etc.mkdir()
    run_command(["opensm", "-c", str(etc / "opensm.conf")], timeout=60, cwd=tmp_path)
    text = (etc / "opensm.conf").read_text()
    (etc / "opensm.conf").write_text(text.replace("sm_priority 0", "sm_priority 15"))
    before = snapshot(tmp_path)
    cp = ibqos_cli("render", tmp_path / "plan.json", "-o", etc, timeout=120)
    assert cp.returncode == 2, cp.stdout + cp.stderr
    assert cp.stderr.splitlines() == [
        f"ibqos: error: {etc / 'opensm.conf'}: is OpenSM's whole configuration, and render writes a fragment "
        "of the plan's options in its place: 'ibqos apply PLAN --opensm-conf' merges the plan into it, or "
        "render to another directory and merge by hand"
    ], cp.stderr
    assert changes(before, snapshot(tmp_path)) == []
    assert osmconf.options(etc / "opensm.conf")["sm_priority"] == "15"
    managed = tmp_path / "managed"
    managed.mkdir()
    (managed / "opensm.conf").symlink_to(etc / "opensm.conf")
    cp = ibqos_cli("render", tmp_path / "plan.json", "-o", managed, timeout=120)
    assert cp.returncode == 2 and "a symlink to" in cp.stderr and (managed / "opensm.conf").is_symlink(), cp.stderr
    for _ in range(2):  # an earlier render's fragment is replaced
        cp = ibqos_cli("render", tmp_path / "plan.json", "-o", tmp_path / "r", timeout=120)
        assert cp.returncode == 0, cp.stderr


# ---- real OpenSM on ibsim -------------------------------------------------------------

GROUP_CAS = ("ca-g0-s0-h0", "ca-g3-s1-h1")  # two CAs in different dragonfly groups


def _fabric_policy(tmp_path: Path) -> Path:
    doc = yaml.safe_load(FOUR.read_text())
    doc["classes"][2]["match"] = {
        "groups": [{"name": "storage", "port_name": [f"{n}/P1" for n in GROUP_CAS]}],
        "direction": "both",
    }
    p = tmp_path / "policy.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


def _check_no_plugin(fabric, plan: Plan) -> list[str]:
    """Without the plugin OpenSM programs qos_ca_* on CAs and qos_swe_* (the terminal role)
    on every switch port, with the same SL2VL everywhere (for a dla plan, the fallback's)."""
    from ibqos.render.fallback import fallback_sl2vl

    want_sl2vl = tuple(fallback_sl2vl(plan.fabric.data_vls) if plan.fabric.routing == "dla" else plan.sl2vl)
    bad = []
    for n in fabric.nodes.values():
        for p in n.ports.values():
            if n.kind == "switch" and p.num == 0:
                continue
            role = "ca" if n.kind == "ca" else "terminal"
            t = plan.vlarb.role(role)
            a = p.vlarb
            if a is None:
                bad.append(f"{n.desc}:{p.num}: no VLArb")
                continue
            pad = lambda e, cap: [tuple(x) for x in e] + [(0, 0)] * (cap - len(e))  # noqa: E731
            if (
                [tuple(x) for x in a.high] != pad(t.high, a.high_cap)
                or [tuple(x) for x in a.low] != pad(t.low, a.low_cap)
                or a.limit != t.limit
            ):
                bad.append(f"{n.desc}:{p.num} ({role}) VLArb {a} planned {t}")
        for key, vls in n.sl2vl.items():
            if tuple(vls) != want_sl2vl:
                bad.append(f"{n.desc} {key}: SL2VL {vls} planned {want_sl2vl}")
    return bad


@pytest.mark.fabric
def test_opensm_programs_the_plan_on_every_port(tmp_path, ibsim_fabric):
    from ibqos.conformance import diff_programmed, expected_from_plan
    from ibqos_sim.harness.topology import DRAGONFLY_SIZES, dragonfly

    plan = _plan(_fabric_policy(tmp_path))
    assert plan.fabric.high_cap == 8  # ibsim's VLArbitrationHighCap/LowCap
    files = render_plan(plan, tmp_path / "rendered")
    plugin = (paths.plugin_dir() / "libibqos.so").exists()
    conf = files["opensm.conf"]
    if not plugin:  # the OpenSM parts alone: drop the engine and the plugin
        conf = tmp_path / "opensm-noplugin.conf"
        conf.write_text(
            "\n".join(
                ln
                for ln in files["opensm.conf"].read_text().splitlines()
                if not ln.startswith(("routing_engine", "event_plugin"))
            )
        )
    net = dragonfly(*DRAGONFLY_SIZES[72][:3]).write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run", console=False) as h:
        run = h.run_sm(engine="dla,minhop" if plugin else "minhop", conf_files=[conf], plugin=plugin, timeout=300)
        log = run.log.read_text(errors="replace")
        assert "qos-policy" not in log.lower() or "error" not in log.lower().split("qos-policy")[1][:200]
        fabric = h.read_back()
        diffs = diff_programmed(fabric, expected_from_plan(plan)) if plugin else _check_no_plugin(fabric, plan)
        assert diffs == [], "\n".join(diffs[:10])
        assert sum(p.vlarb is not None for n in fabric.nodes.values() for p in n.ports.values()) > 72

        # The SA answers path queries between the two matched CAs with the class's SL
        # (the SA needs a running SM: start one as a daemon on the same files).
        sm = h.start_sm(engine="dla,minhop" if plugin else "minhop", conf_files=[conf], plugin=plugin, timeout=300)
        lids = {}
        for n in fabric.cas():
            if n.desc in GROUP_CAS:
                lids[n.desc] = n.lid
        src, dst = (lids[n] for n in GROUP_CAS)
        cp = h.diag(["saquery", "PR", "--src-to-dst", f"{src}:{dst}"])
        sls = re.findall(r"\bsl\s*\.+\s*0x([0-9a-f]+)|\bSL\s*[:.]+\s*(\d+)", cp.stdout, re.I)
        got = {int(a, 16) if a else int(b) for a, b in sls}
        assert got == {plan.class_by_name("CL").sls[0]}, cp.stdout
        # A pair outside the group gets the default class's SL.
        other = next(n.lid for n in fabric.cas() if n.desc not in GROUP_CAS)
        cp = h.diag(["saquery", "PR", "--src-to-dst", f"{src}:{other}"])
        sls = re.findall(r"\bsl\s*\.+\s*0x([0-9a-f]+)|\bSL\s*[:.]+\s*(\d+)", cp.stdout, re.I)
        assert {int(a, 16) if a else int(b) for a, b in sls} == {plan.class_by_name("BE_BK").sls[0]}
        sm.stop()


def _table_file(path: Path) -> tuple[list[str], dict[str, tuple[list[tuple[int, int]], list[tuple[int, int]], int]]]:
    """(directives before the vlarb lines, role -> (high, low, limit)) parsed back."""
    head, roles = [], {}
    for ln in path.read_text().splitlines():
        if not ln.strip() or ln.startswith("#"):
            continue
        f = ln.split()
        if f[0] != "vlarb":
            head.append(ln)
            continue
        assert f[2::2][:3] == ["high", "low", "limit"], ln
        entries = [[tuple(map(int, e.split(":"))) for e in x.split(",")] if x != "-" else [] for x in (f[3], f[5])]
        roles[f[1]] = (entries[0], entries[1], int(f[7]))
    return head, roles


def test_links_plan_renders_vls_per_class_3_and_every_vl_of_a_class(tmp_path):
    doc = yaml.safe_load((ROOT / "examples" / "two-class.yaml").read_text())
    doc["fabric"]["fault_tolerance"] = "links"
    plan = _plan(_write(tmp_path, doc))
    files = render_plan(plan, tmp_path / "out")
    head, roles = _table_file(files["plugin-tables.conf"])
    assert head[:2] == ["version 1", "vls_per_class 3"]
    assert head[2] == "sl2class " + ",".join(map(str, plan.sl2class))
    for role, (high, low, limit) in roles.items():
        t = plan.vlarb.role(role)
        assert (high, low, limit) == ([tuple(e) for e in t.high], [tuple(e) for e in t.low], t.limit)
        for table in (high, low):
            # slots of 3 adjacent entries: VLs 3c, 3c+1, 3c+2 with one weight
            assert len(table) % 3 == 0
            for k in range(0, len(table), 3):
                vls, weights = zip(*table[k : k + 3], strict=True)
                assert vls[0] % 3 == 0 and list(vls) == [vls[0], vls[0] + 1, vls[0] + 2]
                assert len(set(weights)) == 1
    conf = _conf(files["opensm.conf"])
    assert conf["routing_engine"] == "dla,dfsssp,lash,nue"
    # the same policy without the field renders no vls_per_class line
    doc["fabric"].pop("fault_tolerance")
    plain = render_plan(_plan(_write(tmp_path, doc)), tmp_path / "plain")
    head, _ = _table_file(plain["plugin-tables.conf"])
    assert not any(h.startswith("vls_per_class") for h in head)


def _links_plan(tmp_path: Path) -> Plan:
    doc = yaml.safe_load(_fabric_policy(tmp_path).read_text())
    doc["fabric"]["fault_tolerance"] = "links"
    doc["classes"] = [doc["classes"][0], doc["classes"][3]]  # 2 classes x 3 VLs in 8
    doc["classes"][0]["bandwidth"] = 40
    return _plan(_write(tmp_path, doc), cap=(8, 8))


@pytest.mark.fabric
def test_links_plan_read_back_from_opensm_own_qos(tmp_path, ibsim_fabric):
    """OpenSM alone (dfsssp, its qos_* options from the rendered file) programs the links
    plan's VLArb, with entries for all three VLs of each class, on every port."""
    from ibqos_sim.harness.topology import dragonfly

    plan = _links_plan(tmp_path)
    files = render_plan(plan, tmp_path / "rendered")
    conf = tmp_path / "opensm-noplugin.conf"
    conf.write_text(
        "\n".join(
            ln
            for ln in files["opensm.conf"].read_text().splitlines()
            if not ln.startswith(("routing_engine", "event_plugin"))
        )
    )
    net = dragonfly(4, 2, 2, 9).write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        h.run_sm(engine="dfsssp", conf_files=[conf], timeout=300)
        fabric = h.read_back()
    assert _check_no_plugin(fabric, plan) == []
    served = {
        vl
        for n in fabric.nodes.values()
        for p in n.ports.values()
        if p.vlarb
        for vl, w in p.vlarb.high + p.vlarb.low
        if w
    }
    assert served == {0, 1, 2, 3, 4, 5}


@pytest.mark.fabric
def test_links_plan_read_back_through_dla(tmp_path, ibsim_fabric):
    """With the plugin: SL2VL with the stride 3 (Fig. 8 on offsets 0/1) and the role tables,
    equal to the plan on every port."""
    from ibqos.conformance import diff_programmed, expected_from_plan
    from ibqos_sim.harness.topology import dragonfly

    if not (paths.plugin_dir() / "libibqos.so").exists():
        pytest.fail("the plugin is not built: run 'make build'")
    plan = _links_plan(tmp_path)
    files = render_plan(plan, tmp_path / "rendered")
    net = dragonfly(4, 2, 2, 9).write_net(tmp_path / "fabric.net")
    with ibsim_fabric(net, run_dir=tmp_path / "run") as h:
        run = h.run_sm(
            engine="dla,dfsssp,lash,nue", plugin=True, conf_files=[files["opensm.conf"]], timeout=300, check=False
        )
        log = run.log.read_text(errors="replace")
        if re.search(r"ERR D1A3: .*vls_per_class", log):
            pytest.skip(
                "this plugin build does not read vls_per_class yet (tables helper's "
                "parser and the dla stride not merged)"
            )
        assert run.configured_engines()[-1:] == ["dla"], log[-2000:]
        fabric = h.read_back()
    diffs = diff_programmed(fabric, expected_from_plan(plan))
    assert diffs == [], "\n".join(diffs[:10])
    used = {vl for n in fabric.switches() for t in n.sl2vl.values() for vl in t}
    assert used == {0, 1, 3, 4}  # pristine: offsets 0 and 1 of each class


SITE = ROOT / "manager" / "tests" / "policies" / "classify" / "site.yaml"


@pytest.mark.parametrize("policy", [*sorted((ROOT / "examples").glob("*.yaml")), SITE], ids=lambda p: p.stem)
def test_opensm_reads_every_rendered_option_as_written(policy, tmp_path):
    """OpenSM's own option parser (`opensm -F conf -c out` writes back what it read): no option
    of ours is unknown to it or read as another value, including the paths, in a directory
    with a space (a site's policy too: 8 classes, partitions, pinned SLs)."""
    from ibqos.osmconf import parse
    from ibqos.proc import run_command

    text = policy.read_text()
    if policy == SITE:  # the classification test fills in ibsim's GUIDs; any do here
        text = re.sub(r"\{guid:[\w-]+\}", "0x0002c90300001001", text)
        (tmp_path / "site.partitions.conf").write_text((policy.parent / "site.partitions.conf").read_text())
    (tmp_path / policy.name).write_text(text)
    out = tmp_path / "rendered here"
    files = render_plan(_plan(tmp_path / policy.name), out)
    back = tmp_path / "back.conf"
    run_command(
        [paths.require_tool("opensm", "opensm"), "-F", str(files["opensm.conf"]), "-c", str(back)], cwd=tmp_path
    )
    ours, theirs = parse(files["opensm.conf"].read_text()), parse(back.read_text())
    assert {k: (v, theirs.get(k)) for k, v in ours.items() if theirs.get(k) != v} == {}
    assert theirs["qos_policy_file"] == str(out / "qos-policy.conf")


@pytest.mark.parametrize("name", ["a#b", "a\nb", "a\rb"])
def test_a_directory_opensm_conf_cannot_name_is_refused(ibqos_cli, tmp_path, name):
    """OpenSM ends an option's value at '#' or a line break: `qos_policy_file /x/a#b/…` was
    rendered and read as `/x/a`, another file (and the dry run started its fabric first)."""
    from ibqos.errors import InputError

    with pytest.raises(InputError, match=r"OpenSM's opensm\.conf cannot name a file under this directory"):
        render_plan(_plan(), tmp_path / name)
    r = ibqos_cli("dryrun", FOUR, "--topology", "fattree:leaves=1,spines=0,hosts=2", "--out", tmp_path / name)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith(f"ibqos: error: {tmp_path}/a"), r.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_directory_too_long_for_an_opensm_conf_line_is_refused(tmp_path):
    """redfiles: OpenSM reads opensm.conf with fgets(line, 1023), so the bytes of a line from
    1023 on are read as a line of their own: under a directory of about 1000 bytes
    `event_plugin_options` and `qos_policy_file` came back from `opensm -c` cut (1001 of 1035
    bytes), another file. OpenSM reads the longest line ibqos allows whole (the oracle: every
    option as written); one byte more is refused, before anything is written."""
    from ibqos.errors import InputError
    from ibqos.osmconf import parse
    from ibqos.proc import run_command

    plan = _plan()
    longest = len("event_plugin_options ") + len("/plugin-tables.conf")

    def deep(n: int) -> Path:  # a directory whose absolute path has n bytes
        d, left = tmp_path, n - len(str(tmp_path))
        while left > 0:
            part = min(200, left - 1)
            part = part if left - 1 - part != 1 else part - 1  # no empty last component
            d, left = d / ("d" * part), left - 1 - part
        assert len(str(d)) == n, (len(str(d)), n)
        return d

    ok = deep(1022 - longest)
    files = render_plan(plan, ok)
    assert max(len(ln.encode()) for ln in files["opensm.conf"].read_text().splitlines()) == 1022
    back = tmp_path / "back.conf"
    run_command([paths.require_tool("opensm", "opensm"), "-F", str(files["opensm.conf"]), "-c", str(back)])
    ours, theirs = parse(files["opensm.conf"].read_text()), parse(back.read_text())
    assert {k: (v, theirs.get(k)) for k, v in ours.items() if theirs.get(k) != v} == {}
    too_long = deep(1023 - longest)
    with pytest.raises(InputError, match=r"reads 1022 bytes of a line, and 'event_plugin_options' would take 1023"):
        render_plan(plan, too_long)
    assert not too_long.exists()
    # what it would have written: OpenSM reads that path cut, so the limit is exact
    too_long.mkdir(parents=True)
    conf = too_long / "opensm.conf"
    conf.write_text(render_texts(plan, too_long)["opensm.conf"])
    run_command([paths.require_tool("opensm", "opensm"), "-F", str(conf), "-c", str(back)])
    read = parse(back.read_text())["event_plugin_options"]
    assert read == str(too_long / "plugin-tables.conf")[:-1], read[-30:]
