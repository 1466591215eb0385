"""Curation: merge, delete with bridging, split, revert, lifecycle (retire/restore), merge
proposals and the review queue of extracted edge proposals.

Lives here: each use case as a plan (for the preview) and its set-wise write, run inside one
unit of work (``kb.unit_of_work``). Must not live here: history rows or events written by hand
(``kb.history_rows`` and the unit of work do that), or transport code.
"""
