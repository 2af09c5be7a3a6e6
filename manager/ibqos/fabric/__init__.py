"""The one fabric model of ibqos. Every stage reads and writes this, nothing else."""

from .model import NO_ROUTE, SCHEMA, Fabric, Node, Port

__all__ = ["NO_ROUTE", "SCHEMA", "Fabric", "Node", "Port"]
