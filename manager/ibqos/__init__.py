"""ibqos: InfiniBand QoS policy → verified, deadlock-free fabric configuration."""

__version__ = "0.1.0"
