"""``manage.py`` commands of the kb app (banks, tokens, import/export, embeddings, MCP stdio):
each runs as ``command:<name>`` through ``KbCommand`` and calls one service. Must not write
rows themselves.
"""
