"""Choosing the ibsim binary, and build.sh when it has no usable source (no fabric started)."""

from __future__ import annotations

import json
import subprocess

import pytest
from ibqos.errors import ExternalError, InputError
from ibqos.paths import REPO_ROOT
from ibqos_sim.harness import ibsim_binary

BUILD_SH = REPO_ROOT / "ci-sim" / "ibsim-patch" / "build.sh"


@pytest.fixture
def build_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("IBQOS_BUILD_DIR", str(tmp_path))
    monkeypatch.delenv("IBQOS_IBSIM", raising=False)
    return tmp_path


def test_without_a_patched_build_auto_is_debian_and_patched_says_why(build_dir):
    d = build_dir / "ibsim-patched"
    d.mkdir()
    (d / "unavailable.txt").write_text("apt-get source ibsim=0.10-2 failed: 404\n")
    assert ibsim_binary.resolve("auto").kind == "debian"
    assert ibsim_binary.resolve("auto").vlarb_cap == (8, 8)
    with pytest.raises(ExternalError, match=r"not available: apt-get source ibsim=0\.10-2 failed: 404"):
        ibsim_binary.resolve("patched")


def test_patched_tests_skip_without_a_build_unless_required(build_dir, monkeypatch):
    d = build_dir / "ibsim-patched"
    d.mkdir()
    (d / "unavailable.txt").write_text("no source\n")
    monkeypatch.delenv("IBQOS_REQUIRE_PATCHED_IBSIM", raising=False)
    assert ibsim_binary.patched_skip_reason() == "patched ibsim not built: no source"
    monkeypatch.setenv("IBQOS_REQUIRE_PATCHED_IBSIM", "1")  # .ci/run: they run, and fail
    assert ibsim_binary.patched_skip_reason() is None
    monkeypatch.delenv("IBQOS_REQUIRE_PATCHED_IBSIM")
    (d / "ibsim").write_text("")
    assert ibsim_binary.patched_skip_reason() is None


def test_a_patched_build_is_chosen_by_auto_with_its_record(build_dir):
    d = build_dir / "ibsim-patched"
    d.mkdir()
    (d / "ibsim").write_text("")
    (d / "ibsim-patched.json").write_text(json.dumps({"source": "IBSIM_SOURCE=/x.tar.gz", "patch": "0001.patch"}))
    b = ibsim_binary.resolve("auto")
    assert (b.kind, b.vlarb_cap, b.stores_high_limit) == ("patched", (64, 64), True)
    assert b.built_from == "IBSIM_SOURCE=/x.tar.gz + 0001.patch"
    assert ibsim_binary.resolve("debian").kind == "debian"


def test_ibqos_ibsim_sets_the_default_and_a_bad_value_is_one_error(build_dir, monkeypatch):
    monkeypatch.setenv("IBQOS_IBSIM", "patched")
    assert ibsim_binary.default_choice("auto") == "patched"
    monkeypatch.setenv("IBQOS_IBSIM", "newest")
    with pytest.raises(InputError, match="IBQOS_IBSIM='newest'"):
        ibsim_binary.default_choice("auto")


@pytest.mark.parametrize(
    "source, reason",
    [
        ("/nonexistent/ibsim", "IBSIM_SOURCE=/nonexistent/ibsim is neither a Debian source package (.dsc) nor"),
        ("{tmp}/ibsim_0.10-2.dsc", "IBSIM_SOURCE={tmp}/ibsim_0.10-2.dsc does not exist"),
        ("{tmp}/ibsim-0.10.tar.gz", "IBSIM_SOURCE={tmp}/ibsim-0.10.tar.gz does not exist"),
        ("{tmp}/not-ibsim.tar.gz", "IBSIM_SOURCE={tmp}/not-ibsim.tar.gz has sha256 "),
    ],
)
def test_build_sh_without_a_usable_source_records_why_and_succeeds(tmp_path, source, reason):
    tree = tmp_path / "ibsim-0.11" / "ibsim"
    tree.mkdir(parents=True)
    (tree / "sim_mad.c").write_text("")
    (tree / "ibsim.c").write_text('#define IBSIM_VERSION "0.11"\n')
    (tmp_path / "not-ibsim.tar.gz").write_bytes(b"\x1f\x8b not ibsim")
    out = tmp_path / "out"
    env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "IBSIM_SOURCE": source.format(tmp=tmp_path)}
    r = subprocess.run([str(BUILD_SH), str(out)], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert (out / "unavailable.txt").read_text().startswith(reason.format(tmp=tmp_path))
    assert not (out / "ibsim").exists() and not (out / "ibsim-patched.json").exists()
