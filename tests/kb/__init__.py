"""Tests of the kb core: entries, imports, tokens, audit and the unit of work. Must not import
``bench``.
"""
