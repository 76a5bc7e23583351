"""pvcert checker: certificate format and offline replay.

Trusted and small. Never imports ``verifier``, never unpickles or evaluates code.
"""

FORMAT = "pvcert-certificate"
VERSION = 1
