"""pvcert checker: certificate format and offline replay.

Trusted and small. Never imports ``verifier``, never unpickles or evaluates code.
"""

FORMAT = "pvcert-certificate"
VERSION = 1

from . import ops_train  # noqa: E402,F401 (registers batch norm and routing beside ops.py)
