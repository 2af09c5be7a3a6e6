"""Helpers of the testbed tests (a module name no other test directory uses)."""

from __future__ import annotations

import random
import socket
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
REPLAYER = Path(__file__).parent / "replayer" / "perftest_replay.py"


def fixture_text(name: str) -> str:
    """A perftest fixture without its provenance notes (lines starting '#: ')."""
    text = (FIXTURES / "perftest" / name).read_text()
    return "".join(ln for ln in text.splitlines(True) if not ln.startswith("#: "))


def free_base_port() -> int:
    """A base port whose 32 successors are all free, so parallel runs do not collide."""
    for _ in range(200):
        base = random.randrange(20000, 60000)
        socks = []
        try:
            for p in range(base, base + 32):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                socks.append(s)
                s.bind(("0.0.0.0", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free port range")
