"""The graph app: typed, audited, bi-temporal edges between entries and everything built on them
(retrieval and the fold, traversal, curation, resolution, analytics, ingest, extraction).

Lives here: the graph's models and services, its REST views and admin. Must not live here:
anything that writes entries without ``kb.services``, or imports of ``bench`` or ``tests``.
"""
