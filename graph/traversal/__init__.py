"""Traversal: typed, budgeted, bi-temporal walks and the questions built on them."""
