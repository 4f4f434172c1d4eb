"""aniso: an executable, property-tested replication suite for anisotropy in Transformer representations."""

__version__ = "0.1.0"
