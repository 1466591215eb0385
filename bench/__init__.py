"""Benchmarks and measurement labs (scripts that print numbers; not part of the product)."""
