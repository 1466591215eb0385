"""Curation: merge, delete with bridging, split, revert, lifecycle (retire/restore) and merge proposals."""
