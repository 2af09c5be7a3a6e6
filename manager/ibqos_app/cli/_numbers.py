"""The click type of every number option with a range: the range, and a finite number. click's
FloatRange compares bounds only, and nan compares false with both: `testbed report
--tolerance nan` passed every class, `testbed plan --slack nan` ended in an internal error."""

from __future__ import annotations

import math
from typing import Any

import click


class FiniteFloat(click.FloatRange):
    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return rv
