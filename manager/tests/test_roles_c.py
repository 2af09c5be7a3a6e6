"""One role enum: the plugin's C roles (ibqos_tables.h `enum ibqos_vlarb_role`, named in
ibqos_tables.c) are manager/ibqos/roles.py's, in the same order."""

from __future__ import annotations

import re

from ibqos.paths import REPO_ROOT
from ibqos.roles import ROLES, SWITCH_ROLES

SRC = REPO_ROOT / "plugin" / "src"


def test_c_role_enum_is_the_python_one():
    header = (SRC / "ibqos_tables.h").read_text()
    body = re.search(r"enum ibqos_vlarb_role \{(.*?)\};", header, re.S).group(1)
    enum = re.findall(r"IBQOS_ROLE_(\w+)", body)
    assert enum[-1] == "COUNT"
    assert tuple(e.lower() for e in enum[:-1]) == ROLES
    names = dict(re.findall(r'\[IBQOS_ROLE_(\w+)\] = "(\w+)"', (SRC / "ibqos_tables.c").read_text()))
    assert tuple(names[e] for e in enum[:-1]) == ROLES


def test_dla_switch_roles_map_onto_the_enum():
    """dla's switch-port roles (dla_route.h) are bridged to the enum in one function."""
    text = (SRC / "dla_route.c").read_text()
    bridge = re.search(r"enum ibqos_vlarb_role dla_vlarb_role\(enum dla_role role\)\n\{(.*?)\n\}", text, re.S).group(1)
    pairs = re.findall(r"case DLA_ROLE_(\w+):\s*return IBQOS_ROLE_(\w+);", bridge)
    assert pairs == [("TERMINAL", "TERMINAL"), ("LOCAL", "LOCAL"), ("GLOBAL", "GLOBAL")]
    assert {b.lower() for _, b in pairs} <= set(ROLES)


def test_c_switch_role_enum_is_the_python_one():
    header = (SRC / "dla_groups.h").read_text()
    body = re.search(r"enum dla_sw_role \{(.*?)\};", header, re.S).group(1)
    enum = re.findall(r"DLA_SW_(\w+)", body)
    assert tuple(e.lower() for e in enum) == SWITCH_ROLES
    names = dict(re.findall(r'\[DLA_SW_(\w+)\] = "(\w+)"', (SRC / "dla_dfplus.c").read_text()))
    assert tuple(names[e] for e in enum) == SWITCH_ROLES
