"""The optional dependencies (pyproject.toml's extras). A command that needs a missing one
says which extra to install, in one line, before it starts any work."""

from __future__ import annotations

import importlib.util
from typing import Any

from .errors import IbqosError

PLOT = "plot"  # matplotlib: the PNG plots


class MissingExtra(IbqosError):
    """Exit 2, as for an option the installation cannot honour."""


def require_plot(what: str) -> None:
    """Fail now, not after a long run, when matplotlib is not installed."""
    if importlib.util.find_spec("matplotlib") is None:
        raise MissingExtra(f"{what} needs matplotlib: pip install 'ibqos[{PLOT}]'")


def pyplot(what: str) -> Any:
    """matplotlib.pyplot on the file-only Agg backend (no display on an SM host or in CI)."""
    require_plot(what)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
