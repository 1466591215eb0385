"""Retrieval: the fold query, neighbours, answer shaping."""
