"""The knowledge-bank core: banks, entries, embeddings, tokens, the audit trail (operations and
history rows), input limits and the error vocabulary.

Lives here: what every other app builds on. Must not live here: anything that imports
``graph``, ``workflows`` or ``mcpserver`` at module level (they depend on ``kb``, not the other
way round), nor ``bench`` or ``tests``.
"""
