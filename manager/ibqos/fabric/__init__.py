"""The one fabric model of ibqos. Every stage reads and writes this, nothing else."""

from .model import SCHEMA, Fabric, Node, Port, NO_ROUTE

__all__ = ["SCHEMA", "Fabric", "Node", "Port", "NO_ROUTE"]
