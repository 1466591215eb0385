"""Database settings for serving: bounded connection pools and read replicas.

A web process holds at most ``KB_DB_POOL_MAX`` connections (psycopg's pool through Django's
``pool`` option), so the number of clients never decides the number of PostgreSQL
connections: ``web processes × KB_DB_POOL_MAX`` (+ Celery workers) does. Kept free of
``django.db`` imports: the settings module reads it.
"""

from __future__ import annotations

import dj_database_url

from config.environment import Environment


def pool_options(env: Environment) -> dict | None:
    """Django's ``OPTIONS["pool"]`` when pooling is on (``KB_DB_POOL``), else None."""
    if not env["KB_DB_POOL"]:
        return None
    return {
        "min_size": env["KB_DB_POOL_MIN"],
        "max_size": env["KB_DB_POOL_MAX"],
        # How long a request waits for a free connection before it is answered 503.
        "timeout": env["KB_DB_POOL_TIMEOUT"],
        "max_idle": 300,
    }


def apply_serving_options(db: dict, pool: dict | None, env: Environment) -> dict:
    """Bounded connections: with a pool CONN_MAX_AGE must be 0; without one, keep it short."""
    options = db.setdefault("OPTIONS", {})
    options.setdefault("connect_timeout", env["KB_DB_CONNECT_TIMEOUT"])
    # Names this app's sessions in pg_stat_activity (per role, e.g. web or worker).
    options.setdefault("application_name", env["KB_DB_APPLICATION_NAME"])
    if pool:
        options["pool"] = dict(pool)
        db["CONN_MAX_AGE"] = 0
        # The pool checks a connection before handing it out (Django passes psycopg_pool's
        # check_connection): one that died with a server restart is replaced, not used.
        db["CONN_HEALTH_CHECKS"] = True
    return db


def replica_databases(primary: dict, urls: list[str]) -> dict[str, dict]:
    """``DATABASE_REPLICA_URLS`` (comma-separated) as aliases ``replica_0``, ``replica_1``…

    Each inherits the primary's session options and pool sizes; in tests a replica mirrors the
    primary's test database."""
    replicas = {}
    for index, url in enumerate(urls):
        db = dj_database_url.parse(url, conn_max_age=primary.get("CONN_MAX_AGE", 0))
        options = db.setdefault("OPTIONS", {})
        for key, value in primary.get("OPTIONS", {}).items():
            if key == "options" and "options" in options:
                options["options"] = f"{value} {options['options']}"  # both sets of -c flags
            else:
                options.setdefault(key, value)
        db["TEST"] = {"MIRROR": "default"}
        replicas[f"replica_{index}"] = db
    return replicas
