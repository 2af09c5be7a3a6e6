"""The port roles, defined once: what a port is to the arbitration plan (docs/policy.md,
"Port roles"; docs/groups.md says which port has which). The plugin has the same five in C
(ibqos_tables.h, `enum ibqos_vlarb_role`), checked against these by tests/test_roles_c.py."""

from __future__ import annotations

from typing import Literal, get_args

Role = Literal["ca", "sw0", "terminal", "local", "global"]
ROLES: tuple[Role, ...] = get_args(Role)  # in plan order
