"""Minimal stand-in for the `expecttest` package (harness-only).

torch.testing._internal.common_utils does `import expecttest` at import time,
but Debian 12 does not package expecttest and we cannot use PyPI. common_utils
only needs two things from it:

  * ``expecttest.ACCEPT``   -- a module-level flag ("accept new expect output")
  * ``expecttest.TestCase`` -- the base class of common_utils.TestCase

The real package adds ``assertExpectedInline`` (rewrites the test source with
the actual output); nothing in the distributed suite calls it, so it is kept
as a plain comparison that never rewrites files.

run_suite.py puts this directory first on sys.path, so this file only shadows
a real expecttest when the harness is used.
"""

import unittest

ACCEPT = False


class TestCase(unittest.TestCase):
    # Keep tracebacks short, as the real expecttest.TestCase does.
    longMessage = True

    def assertExpectedInline(self, actual, expect, skip=0):
        # The real one can rewrite the expected string in the test's source
        # when ACCEPT is set; the stand-in only compares.
        self.assertMultiLineEqual(expect, actual)
