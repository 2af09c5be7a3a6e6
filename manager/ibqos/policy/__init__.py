"""The policy file: schema, loading with line numbers, semantic checks.

from ibqos.policy import load_policy
policy = load_policy("examples/four-class.yaml")
"""

from ..roles import ROLES
from .load import load_policy
from .model import ClassSpec, FabricSpec, Policy

__all__ = ["ROLES", "ClassSpec", "FabricSpec", "Policy", "load_policy"]
