"""Curation services: merges, deletion with bridging, split, revert, proposal queues."""
