"""VL arbitration analysis (docs/arbiter.md): the table type and two saturation analyzers.

from ibqos.arbiter import ArbTable
from ibqos.arbiter.exact import analyze_exact            # one exact period
from ibqos.arbiter.algorithm1 import analyze_algorithm1  # seed 002, Algorithm 1
"""

from .accounting import MODES
from .result import ArbAnalysis
from .table import ArbTable
from .trace import VlStats

__all__ = ["MODES", "ArbAnalysis", "ArbTable", "VlStats"]
