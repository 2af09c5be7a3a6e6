"""What OpenSM runs when dla refuses a fabric: a chain of built-in engines that is itself
deadlock-free on a dragonfly, and the SL2VL that keeps it so (docs/fallback.md).

OpenSM 3.3.23 tries `routing_engine` left to right and uses minhop only when every engine
in the list fails; minhop's routing of a dragonfly has credit loops. dfsssp and lash are
deadlock-free by *layers*: each path gets an SL (the layer), and the layers stay apart only
while different layer SLs land on different VLs. Both engines replace the QoS SL in every
path record with their layer SL (path_sl), and OpenSM programs the `qos_*_sl2vl` of the
config file whenever the engine in use has no SL2VL hook, i.e. under every fallback engine
(dla programs SL2VL itself and never reads these lines). So the rendered SL2VL is the
identity on the data VLs, and `max_op_vls` (VLCap code of the plan's data VLs, ibqos.vls)
caps the ports at them, so no fallback engine hands out an SL beyond them. On a first sweep
the switch ports still hold their power-up OperVLs when the fallback routes; the plugin sets
them to what the link manager will program before it refuses (plugin/src/fallback_vls.c).
"""

from __future__ import annotations

from ..vls import vlcap_code

# dfsssp first: its routing pass is 3-4x faster than lash's at 1056-2550 CAs (a fault
# re-sweep blocks the SM for that long), and it balances paths over every VL. lash second:
# it needs fewer VLs (2-3 where dfsssp takes 3-5), so it still routes when dfsssp runs out.
FALLBACK_ENGINES = ("dfsssp", "lash")
DLA_CHAIN = ",".join(("dla",) + FALLBACK_ENGINES)

# The fewest data VLs with which the chain was measured deadlock-free on every fabric dla
# refuses (docs/fallback.md): on the 42-CA dragonfly with LMC 1 or a local link missing,
# dfsssp and lash each need 3 VLs, so with 2 both fail and OpenSM 3.3.23 routes with minhop,
# whose routing of a dragonfly has credit loops.
FALLBACK_MIN_VLS = 4


def fallback_sl2vl(data_vls: int) -> list[int]:
    """SL s -> VL s on the data VLs: the layer SLs a fallback engine hands out (at most one per
    operational VL) each keep a VL of their own. SLs past the data VLs share the last one;
    with max_op_vls at the data VLs no fallback engine uses them."""
    return [min(sl, data_vls - 1) for sl in range(16)]


def fallback_caveat(data_vls: int) -> str | None:
    """What the chain cannot promise with this few data VLs, said in the plan's notes and the
    rendered opensm.conf; None when it was measured deadlock-free on every refused fabric."""
    if data_vls >= FALLBACK_MIN_VLS:
        return None
    return (
        f"with {data_vls} data VL(s) the fallback for a fabric dla refuses is deadlock-free only where "
        f"dfsssp or lash fit their layers in {data_vls} VL(s): a fat tree does, the dragonflies measured "
        "need 3, and there OpenSM routes with minhop, which has credit loops (ibqos verify and status "
        "print the red line; docs/fallback.md)"
    )


def fallback_options(data_vls: int) -> dict[str, str]:
    """The opensm.conf options a fallback engine needs besides `routing_engine DLA_CHAIN` (what
    `ibqos render` writes under dla), for a harness that starts OpenSM without a rendered file."""
    sl2vl = ",".join(map(str, fallback_sl2vl(data_vls)))
    sl2vls = {f"qos_{t}sl2vl": sl2vl for t in ("", "ca_", "swe_", "sw0_", "rtr_")}
    return {"max_op_vls": str(vlcap_code(data_vls)), **sl2vls}
