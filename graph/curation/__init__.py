"""Curation: merge, delete with bridging, split, revert, lifecycle (retire/restore), merge
proposals and the review queue of extracted edge proposals."""
