"""Edges: link, unlink, retype and correct (append-only, audited), the relation vocabulary, the
two clocks and the one "current edge" rule (``current.py``).

Must not live here: another spelling of "current" (use ``current_edge_sql``, ``current_q`` or
``edge_is_current``), or writes of edges that bypass ``links.py``.
"""
