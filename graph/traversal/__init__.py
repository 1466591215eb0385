"""Traversal: typed, budgeted, bi-temporal walks and the questions built on them.

Must not live here: writes, or unbounded walks (every walk has its budgets and says when it
was truncated).
"""
