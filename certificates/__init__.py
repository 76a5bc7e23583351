"""pvcert checker: certificate format and offline replay.

Trusted and small. Never imports ``verifier``, never unpickles or evaluates code.
"""

FORMAT = "pvcert-certificate"
VERSION = 1

from . import ops_batchnorm  # noqa: E402,F401 (registers batch norm beside ops.py's operators)
