"""pvcert engine: capture, search and proof; writes certificates for ``certificates`` to replay."""

from certificates import ops_aten, ops_grad, ops_train  # noqa: F401 (every operator family, in the engine)

__version__ = "0.1.0"
