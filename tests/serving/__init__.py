"""Tests of serving: request ids and logs, settings and the environment table, ``make run``.
Must not import ``bench``.
"""
