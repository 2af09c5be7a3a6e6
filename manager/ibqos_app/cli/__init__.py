"""`ibqos` console script. One module per command; they are imported only when used."""

from ._main import main

__all__ = ["main"]
