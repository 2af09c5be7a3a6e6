"""The two accounting modes of docs/arbiter.md: how a turn is charged and how hi_count resets."""

from __future__ import annotations

MODES = ("byte", "packet")
UNIT = 64  # bytes per weight unit
LIMIT_UNIT = 4096  # bytes per VLHighLimit unit


class Accounting:
    """Saturated arbiter: every VL in a table is always active, so a turn never ends early."""

    def __init__(self, mode: str, packet_bytes: int, limit: int):
        if mode not in MODES:
            raise ValueError(f"mode: {mode!r} is not one of {', '.join(MODES)}")
        if packet_bytes <= 0:
            raise ValueError(f"packet size must be positive, got {packet_bytes}")
        self.mode, self.size, self.limit = mode, packet_bytes, limit
        self.limit_bytes = 1 if limit == 0 else LIMIT_UNIT * limit

    def turn(self, weight: int, deficit: int) -> tuple[int, int]:
        """Packets one entry's turn sends, and the entry's deficit afterwards."""
        if self.mode == "packet":
            return max(1, -(-UNIT * weight // self.size)), 0
        d = deficit + UNIT * weight
        if d <= 0:
            return 0, d
        n = -(-d // self.size)
        return n, d - n * self.size

    def after_low_turn(self, hi_count: int) -> int:
        if self.mode == "packet" or self.limit == 0:
            return 0
        return max(0, hi_count - self.limit_bytes)
