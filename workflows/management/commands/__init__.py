"""``manage.py`` commands of the workflows app; each calls a workflows service. Must not write
rows themselves.
"""
