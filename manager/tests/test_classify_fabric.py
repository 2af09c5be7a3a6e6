"""Classification on real OpenSM: for every example policy and the policies in
policies/classify/, the dry run's own configuration runs on an ibsim dragonfly and the SA
answers PathRecord queries for a sample of (source, destination, service ID, P_Key); every SL
must be the one an independent reading of the policy text gives.

The expectation is computed here from the YAML alone, following docs/policy.md ("How traffic
is classified"): classes in policy order, first match wins; a class matches by its groups
(per `direction`) together with its service IDs / P_Keys, or by any of its ULPs, whose
service IDs are those of the IBTA annexes as OpenSM reads them (SDP 0x10000 + TCP port, RDS
and iSER 0x1060000 + TCP port, defaults 18634 and 3260; IPoIB the default P_Key 0x7fff).
Only the SL numbers of the classes come from the plan (the planner assigns free SLs).
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
import yaml
from ibqos_sim.harness.diags import saquery_ipoib_broadcast_sls

pytestmark = pytest.mark.fabric

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent / "policies" / "classify"
POLICIES = sorted((ROOT / "examples").glob("*.yaml")) + sorted(HERE.glob("*.yaml"))
TOPOLOGY = "dragonfly:a=2,p=2,h=1"  # 3 groups, 6 switches, 12 CAs
KEYS = [
    None,
    0x500,
    0x50F,
    0x510,
    0x3005,
    0x1138C,
    0x1138D,
    0x1138E,
    0x10000,
    0x1060CBC,
    0x10648CA,
    0x1061388,
    0x2000,
    0xAB0001,
    # site.yaml's services: MPI ranges, Lustre o2ib (RDMA CM port 987), NFS/RDMA (port 20049)
    0x1500,
    0x2FFF,
    0x10603DB,
    0x1064E51,
]
PKEYS = [0x7FFF, 0x0A01, 0x0A02]
PAIRS = 36


# ---- the independent classification --------------------------------------------------


def _num(v) -> int:
    return v if isinstance(v, int) else int(str(v), 0)


def _in(value: int | None, ranges) -> bool:
    if value is None:
        return False
    for r in ranges:
        lo, _, hi = str(r).partition("-") if not isinstance(r, int) else (r, "", "")
        if _num(lo) <= value <= _num(hi or lo):
            return True
    return False


def _member(g: dict, port: dict) -> bool:
    named = g.get("port_name") or g.get("port_guid")
    if not named:
        return port["type"] in g.get("node_type", [])
    # A switch has one port GUID: naming any of its ports names the switch (port 0).
    hit = any(
        n.rsplit("/", 1)[0] == port["node"] if port["type"] == "SWITCH" else n == port["name"]
        for n in g.get("port_name", [])
    ) or _in(port["guid"], g.get("port_guid", []))
    return hit and (not g.get("node_type") or port["type"] in g["node_type"])


def _ulp(u, src, dst, sid, pkey) -> bool:
    u = {"ulp": u} if isinstance(u, str) else u

    def ports(base):
        return [f"{base + _num(a):#x}-{base + _num(b or a):#x}" for a, _, b in [str(u["port_num"]).partition("-")]]

    kind = u["ulp"]
    if kind == "sdp":
        return _in(sid, ports(0x10000) if "port_num" in u else ["0x10000-0x1ffff"])
    if kind in ("rds", "iser"):
        default = 18634 if kind == "rds" else 3260
        return _in(sid, ports(0x1060000) if "port_num" in u else [0x1060000 + default])
    if kind == "ipoib":
        return _in(pkey, [u.get("pkey", "0x7fff")])
    if kind == "srp":
        return _in(dst["guid"], [u["target_port_guid"]])
    if "service_id" in u:
        return _in(sid, [u["service_id"]])
    if "pkey" in u:
        return _in(pkey, [u["pkey"]])
    if "target_port_guid" in u:
        return _in(dst["guid"], [u["target_port_guid"]])
    return _in(src["guid"], [u["source_port_guid"]])


def expected_class(doc: dict, src: dict, dst: dict, sid: int | None, pkey: int | None) -> str:
    for c in doc["classes"]:
        m = c.get("match") or {}
        groups = m.get("groups") or []
        crit = [k for k in ("service_id", "pkey", "qos_class") if m.get(k)]
        if groups or crit:
            s = any(_member(g, src) for g in groups)
            d = any(_member(g, dst) for g in groups)
            ends = (
                {"either": s or d, "both": s and d, "source": s, "destination": d}[m.get("direction", "either")]
                if groups
                else True
            )
            keys = {"service_id": sid, "pkey": pkey, "qos_class": None}
            if ends and all(_in(keys[k], m[k]) for k in crit):
                return c["name"]
        if any(_ulp(u, src, dst, sid, pkey) for u in m.get("ulps") or []):
            return c["name"]
    return next(c["name"] for c in doc["classes"] if c.get("default"))


# ---- the fabric run -----------------------------------------------------------------------


def _ports(fabric) -> dict[str, dict]:
    out = {}
    for n in fabric.nodes.values():
        for p in n.ports.values():
            if p.lid and p.guid:
                name = f"{n.desc}/P{p.num}"
                out[name] = {
                    "name": name,
                    "node": n.desc,
                    "guid": p.guid,
                    "lid": p.lid,
                    "type": "CA" if n.kind == "ca" else "SWITCH",
                }
    return out


@pytest.fixture(scope="module")
def guids(tmp_path_factory) -> dict[str, int]:
    """Port GUIDs ibsim gives the test topology (the same for every ibsim on this net file)."""
    from ibqos_sim.harness import Harness
    from ibqos_sim.harness.topology import from_spec

    d = tmp_path_factory.mktemp("guids")
    net = from_spec(TOPOLOGY).write_net(d / "fabric.net")
    with Harness(net, run_dir=d / "run", console=False) as h:
        h.run_sm(engine="minhop")
        return {n.desc: p.guid for n in h.read_back(save=False).cas() for p in n.ports.values()}


def _policy_text(path: Path, guids: dict[str, int]) -> str:
    text = path.read_text()
    text = re.sub(
        r"\{guid:([\w-]+)\}-\{guid:([\w-]+)\}",
        lambda m: "-".join(f"{g:#x}" for g in sorted((guids[m[1]], guids[m[2]]))),
        text,
    )
    return re.sub(r"\{guid:([\w-]+)\}", lambda m: f"{guids[m[1]]:#x}", text)


def _groups(doc: dict) -> list[dict]:
    return [g for c in doc["classes"] for g in (c.get("match") or {}).get("groups") or []]


def _sample(doc: dict, text: str, ports: dict[str, dict], rng: random.Random):
    """Pairs: every port the policy names (by name or GUID, in a group or a ULP rule) against
    a few others, switch ports where a policy names one, and random CA pairs (most of them
    outside every group)."""
    cas = sorted(n for n, p in ports.items() if p["type"] == "CA")
    named = sorted(
        {n for g in _groups(doc) for n in g.get("port_name", []) if n in ports}
        | {n for n in cas if f"{ports[n]['guid']:#x}" in text.lower()}
    )
    pairs = set()
    for n in named:
        for o in rng.sample(cas, 3):
            if o != n:
                pairs |= {(n, o), (o, n)}
    pairs |= {(a, b) for a in named for b in named if a != b}
    while len(pairs) < PAIRS:
        a, b = rng.sample(cas, 2)
        pairs.add((a, b))
    return sorted(pairs)


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: p.stem)
def test_every_path_gets_the_sl_of_its_class(policy, guids, tmp_path, ibsim_fabric):
    from ibqos import osmlog
    from ibqos.render.fallback import DLA_CHAIN
    from ibqos.verify.sa_paths import query_path_sl_keys
    from ibqos_app.dryrun.pipeline import DryRun, DryRunConfig

    text = _policy_text(policy, guids)
    path = tmp_path / policy.name
    path.write_text(text)
    for extra in policy.parent.glob(f"{policy.stem}.*.conf"):
        (tmp_path / extra.name).write_text(extra.read_text())
    doc = yaml.safe_load(text)

    # The dry run's own plan and rendered configuration, on the dry run's fabric.
    (tmp_path / "dry").mkdir()
    dry = DryRun(DryRunConfig(policy=path, out=tmp_path / "dry", topology=TOPOLOGY))
    dry.stage_plan()
    dry.stage_render()
    plan = dry.s.plan
    dla = plan.fabric.routing == "dla"
    with ibsim_fabric(dry.s.netfile, run_dir=tmp_path / "run", console=False) as h:
        sm = h.start_sm(
            engine=DLA_CHAIN if dla else plan.fabric.routing, plugin=dla, conf_files=[dry.s.rendered["opensm.conf"]]
        )
        # OpenSM's qos-policy parser logs ERR AC..; its partitions parser "PARSE ERROR" only
        errs = [e for e in osmlog.errors(sm.lines()) if "ERR D1A" not in e]
        errs += osmlog.matching(sm.lines(), "PARSE ERROR")
        assert errs == [], errs[:3]
        ports = _ports(h.read_back(save=False))
        rng = random.Random(policy.stem)
        keys = [(sid, None) for sid in KEYS]
        if doc.get("partitions"):
            keys += [(sid, pk) for pk in PKEYS for sid in (None, 0x1138C)]
        queries, want = [], []
        for a, b in _sample(doc, text, ports, rng):
            for sid, pk in rng.sample(keys, 6) if len(keys) > 6 else keys:
                src, dst = ports[a], ports[b]
                queries.append((src["guid"], dst["guid"], sid, None if pk is None else pk | 0x8000))
                want.append((a, b, sid, pk, expected_class(doc, src, dst, sid, pk)))
        # Where a policy names a switch port, ask for paths between it and every CA too.
        for sw in sorted(n for n, p in ports.items() if p["type"] == "SWITCH" and f'"{p["node"]}/P' in text):
            for ca in sorted(n for n, p in ports.items() if p["type"] == "CA"):
                for a, b in ((sw, ca), (ca, sw)):
                    queries.append((ports[a]["guid"], ports[b]["guid"], None, None))
                    want.append((a, b, None, None, expected_class(doc, ports[a], ports[b], None, None)))
        got = query_path_sl_keys(queries, h.env)
        broadcast = saquery_ipoib_broadcast_sls(h.env, tmp_path) if doc.get("partitions") else {}
        sm.stop()

    sl_of = {c.name: c.sls[0] for c in plan.classes}
    wrong = [
        f"{a} -> {b} sid={sid and hex(sid)} pkey={pk and hex(pk)}: SL {sl}, want {sl_of[cls]} ({cls})"
        for (a, b, sid, pk, cls), sl in zip(want, got, strict=True)
        if sl != sl_of[cls]
    ]
    assert not wrong, f"{len(wrong)} of {len(want)} paths:\n" + "\n".join(wrong[:12])
    # IPoIB's broadcast group, which OpenSM creates on the partition's SL, is on the SL of the
    # class that takes IPoIB there too (its multicast would run in another class otherwise)
    for c in doc["classes"]:
        for u in (c.get("match") or {}).get("ulps") or []:
            if u == "ipoib" or (isinstance(u, dict) and u["ulp"] == "ipoib"):
                pk = _num(u.get("pkey", "0x7fff") if isinstance(u, dict) else "0x7fff") & 0x7FFF
                assert broadcast.get(pk) == sl_of[c["name"]], (hex(pk), broadcast, c["name"])
    if policy.parent == HERE:  # the sample reaches more than the default class
        assert len({c for *_, c in want}) >= 2

    def grouped(port: dict) -> bool:
        return any(_member(g, port) for g in _groups(doc))

    if _groups(doc) and sum(not grouped(p) for p in ports.values() if p["type"] == "CA") >= 2:
        # and pairs outside every group (classified by keys and ULPs alone), where there are any
        assert any(not grouped(ports[a]) and not grouped(ports[b]) for a, b, *_ in want), "no pair outside the groups"
