"""Who applied a version, and when: the stamp each version's meta.json and each apply's
history line carry (confset writes it, history and the apply read it)."""

from __future__ import annotations

import getpass
import os
import time
from typing import Any


def who() -> str:
    """The person behind the command: sudo's caller, else the login (or the uid's) name."""
    if os.environ.get("SUDO_USER"):
        return os.environ["SUDO_USER"]
    try:
        return os.getlogin()
    except OSError:
        try:
            return getpass.getuser()
        except (KeyError, OSError):
            return f"uid {os.getuid()}"


def stamp() -> dict[str, Any]:
    return {"time": time.time(), "who": who()}
