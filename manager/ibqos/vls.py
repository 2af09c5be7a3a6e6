"""Data VLs, counted and coded, defined once (IBA 14.2.5.6, PortInfo VLCap / OperationalVLs).

A port runs 1, 2, 4, 8 or 15 data VLs. PortInfo carries the *code*, and so does OpenSM's
`max_op_vls` option (3.3.23 caps each link's OperationalVLs at it: osm_port.c
osm_physp_calc_link_op_vls, default 5): 1 = VL0, 2 = VL0-1, 3 = VL0-3, 4 = VL0-7, 5 = VL0-14.
Policies, plans and the fabric model count VLs; only what is written for OpenSM or read from
PortInfo is coded, through these two functions. The C side has the same table (plugin
`dla_vls_from_code`); docs/vlcap-vectors.json holds the pairs both are tested against.
"""

from __future__ import annotations

from typing import Literal, get_args

DataVls = Literal[1, 2, 4, 8, 15]
DATA_VL_COUNTS: tuple[int, ...] = get_args(DataVls)


def vlcap_code(count: int) -> int:
    """The VLCap / OperationalVLs / max_op_vls code of a data-VL count (8 -> 4)."""
    if type(count) is not int or count not in DATA_VL_COUNTS:
        *head, last = map(str, DATA_VL_COUNTS)
        raise ValueError(f"{count!r} data VLs: a port runs {', '.join(head)} or {last} (PortInfo VLCap)")
    return DATA_VL_COUNTS.index(count) + 1


def vls_of_code(code: int) -> int:
    """The data VLs a VLCap / OperationalVLs code stands for (4 -> 8); 0 for a code that
    stands for none (0, 6-15: reserved)."""
    return DATA_VL_COUNTS[code - 1] if 1 <= code <= len(DATA_VL_COUNTS) else 0
