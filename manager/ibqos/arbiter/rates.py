"""Link data rates (4x width, after line encoding), in Gb/s."""

from __future__ import annotations

import math
import re

# Data rates: what a byte count is divided by to get a time on the wire.
RATES_GBPS = {
    "SDR": 8.0,
    "DDR": 16.0,
    "QDR": 32.0,
    "FDR10": 40.0,
    "FDR": 54.54,
    "EDR": 100.0,
    "HDR": 200.0,
    "NDR": 400.0,
    "XDR": 800.0,
}
# 12 lanes of XDR: no InfiniBand port is faster, so a larger number is a unit slip (Mb/s)
MAX_GBPS = 3 * RATES_GBPS["XDR"]
# one lane of SDR: no InfiniBand port is slower, so a smaller number is a unit slip (Tb/s), and
# a subnormal one makes a packet's time on the wire infinite
MIN_GBPS = RATES_GBPS["SDR"] / 4

# PortInfo's active lane speed as OpenSM's dumps (osm_dump.c) and ibqos-readback name it (a
# number, or OpenSM's "FDR10"), to the rate it belongs to. The numbers are nominal, not data
# rates: SDR-QDR signal 2.5/5/10 Gbaud with 8b/10b (2/4/8 Gb/s of data), FDR10 10.3125 and
# FDR 14.0625 with 64b/66b (10 and 13.64), EDR 25.78125 with 64b/66b (25), HDR 53.125 and
# NDR 106.25 (50 and 100). A lane carries a quarter of the 4x data rate above.
LANE_SPEED_RATES = {2.5: "SDR", 5.0: "DDR", 10.0: "QDR", 14.0: "FDR", 25.0: "EDR", 50.0: "HDR", 100.0: "NDR"}
# Link widths (lanes) PortInfo's LinkWidthActive encodes: 1x, 4x, 8x, 12x and (IBA 1.3) 2x.
LANE_COUNTS = (1, 2, 4, 8, 12)

# What a fabric model may say of a port's width and lane speed: nothing ("", a source that does
# not carry it), unknown (OpenSM's dumps write "???"/"????", ibqos-readback "??"), or a value
# link_data_gbps reads ("4X"; "25", "10.0", "FDR10"). The one spelling of both, for the model's
# check and its JSON Schema.
_UNKNOWN = r"|\?+"
WIDTH_PATTERN = rf"^(?:{_UNKNOWN}|(?:{'|'.join(map(str, LANE_COUNTS))})[Xx])$"
LANE_SPEED_PATTERN = rf"^(?:{_UNKNOWN}|FDR10|(?:{'|'.join(re.escape(f'{v:g}') for v in LANE_SPEED_RATES)})(?:\.0*)?)$"


def link_data_gbps(width: str, speed: str) -> float | None:
    """Data rate of a link from PortInfo's active width ("4X") and lane speed ("25", or "10.0",
    or OpenSM's "FDR10"), in Gb/s; None when either is unknown ("??")."""
    try:
        lanes = int(width.strip().rstrip("Xx"))
        rate = "FDR10" if speed.strip() == "FDR10" else LANE_SPEED_RATES.get(float(speed))
    except ValueError:
        return None
    return lanes * RATES_GBPS[rate] / 4 if rate and lanes > 0 else None


def rate_gbps(rate: str | float | int) -> float:
    """`EDR` -> 100.0; numbers (or numeric strings, optionally with `G`/`Gb/s`) are Gb/s."""
    if isinstance(rate, (int, float)) and not isinstance(rate, bool):
        value = float(rate)
    else:
        text = str(rate).strip()
        if text.upper() in RATES_GBPS:
            return RATES_GBPS[text.upper()]
        num = text.lower().removesuffix("gb/s").removesuffix("gbps").removesuffix("g").strip()
        try:
            value = float(num)
        except ValueError as exc:
            raise ValueError(
                f"unknown link rate {text!r} (use one of {', '.join(RATES_GBPS)} or a number of Gb/s)"
            ) from exc
    if not value > 0:
        raise ValueError(f"link rate must be positive, got {value}")
    if not math.isfinite(value):  # `1e400` is a float too
        raise ValueError(f"link rate must be a finite number of Gb/s, got {rate!r}")
    if value < MIN_GBPS:
        raise ValueError(
            f"link rate {value:g} Gb/s is below the slowest InfiniBand port (SDR 1x, {MIN_GBPS:g} Gb/s): "
            "the number is in Gb/s"
        )
    if value > MAX_GBPS:
        raise ValueError(
            f"link rate {value:g} Gb/s is above the fastest InfiniBand port (XDR 12x, {MAX_GBPS:g} Gb/s): "
            "the number is in Gb/s"
        )
    return value


def bytes_to_us(nbytes: int, gbps: float) -> float:
    return nbytes * 8 / (gbps * 1000.0)


def us_to_bytes(us: float, gbps: float) -> float:
    return us * gbps * 1000.0 / 8
