"""pvcert engine: capture, search and proof; writes certificates for ``certificates`` to replay."""

__version__ = "0.1.0"
