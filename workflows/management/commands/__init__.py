"""``manage.py`` commands of the workflows app; each calls a workflows service."""
