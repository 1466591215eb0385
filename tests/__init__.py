"""The test suite (pytest-django on the embedded PostgreSQL): one folder per app, plus ``api``
(the contract), ``serving``, ``mcp``, ``e2e`` (browser) and ``labs`` (measurement scaffolding).

Must not live here: skipped or expected-to-fail tests, timed assertions (benchmarks print
numbers: ``bench/``), or imports of ``bench``.
"""
