"""What OpenSM runs when dla refuses a fabric: a chain of built-in engines that is itself
deadlock-free on a dragonfly, and the SL2VL that keeps it so (docs/fallback.md).

OpenSM 3.3.23 tries `routing_engine` left to right and uses minhop only when every engine
in the list fails; minhop's routing of a dragonfly has credit loops. dfsssp, lash and nue
spread paths over *layers*: each path gets an SL (the layer), and the layers stay apart only
while different layer SLs land on different VLs. The engines replace the QoS SL in every
path record with their layer SL (path_sl), and OpenSM programs the `qos_*_sl2vl` of the
config file whenever the engine in use has no SL2VL hook, i.e. under every fallback engine
(dla programs SL2VL itself and never reads these lines). So the rendered SL2VL is the
identity on the data VLs, and `max_op_vls` (VLCap code of the plan's data VLs, ibqos.vls)
caps the ports at them, so no fallback engine hands out an SL beyond them (nue is capped
by `nue_max_num_vls` as well: OpenSM's default, 1, would give up its layers). On a first sweep
the switch ports still hold their power-up OperVLs when the fallback routes; the plugin sets
them to what the link manager will program before it refuses (plugin/src/fallback_vls.c).
"""

from __future__ import annotations

from ..vls import vlcap_code

# dfsssp first: its routing pass is 3-4x faster than lash's at 1056-2550 CAs (a fault
# re-sweep blocks the SM for that long), and it balances paths over every VL. lash second:
# it needs fewer VLs (2-3 where dfsssp takes 3-5), so it still routes when dfsssp runs out.
# nue last: deadlock-free on any connected fabric with any number of VLs, one included (it
# routes inside a complete channel dependency graph, 3.3.23 osm_ucast_nue.c), so the chain
# never reaches OpenSM's minhop; but its routes are not minimal, so it only routes where both
# minimal engines ran out of VLs (2 data VLs on a dragonfly: docs/fallback.md).
FALLBACK_ENGINES = ("dfsssp", "lash", "nue")
DLA_CHAIN = ",".join(("dla",) + FALLBACK_ENGINES)


def fallback_sl2vl(data_vls: int) -> list[int]:
    """SL s -> VL s on the data VLs: the layer SLs a fallback engine hands out (at most one per
    operational VL) each keep a VL of their own. SLs past the data VLs share the last one;
    with max_op_vls at the data VLs no fallback engine uses them."""
    return [min(sl, data_vls - 1) for sl in range(16)]


def fallback_options(data_vls: int) -> dict[str, str]:
    """The opensm.conf options a fallback engine needs besides `routing_engine DLA_CHAIN` (what
    `ibqos render` writes under dla), for a harness that starts OpenSM without a rendered file."""
    sl2vl = ",".join(map(str, fallback_sl2vl(data_vls)))
    sl2vls = {f"qos_{t}sl2vl": sl2vl for t in ("", "ca_", "swe_", "sw0_", "rtr_")}
    return {"max_op_vls": str(vlcap_code(data_vls)), "nue_max_num_vls": str(data_vls), **sl2vls}
