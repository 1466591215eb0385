"""Benchmarks: scripts that print numbers (old and new side by side, in one run).

Lives here: the scripts, their set-up helpers and their README. Must not live here: anything
the product or the tests import (``tests/test_package_boundaries.py``), nor timed assertions.
"""
