"""Django database backend: PostgreSQL on the embedded server, started on first connect."""

from __future__ import annotations

import psycopg
from django.db.backends.postgresql import base as postgresql

from .server import ensure_server


def _ensure_database(socket_dir: str, user: str, name: str) -> None:
    with psycopg.connect(host=socket_dir, user=user, dbname="postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


class DatabaseWrapper(postgresql.DatabaseWrapper):
    """The stock PostgreSQL backend, pointed at the embedded server's socket."""

    _checked_databases: set[str] = set()

    def get_connection_params(self):
        socket_dir = ensure_server()
        self.settings_dict["HOST"] = socket_dir
        params = super().get_connection_params()
        name = params.get("dbname")
        # The test runner creates its own database through the "postgres" database.
        if name and name != "postgres" and name not in self._checked_databases:
            _ensure_database(socket_dir, params.get("user") or "postgres", name)
            self._checked_databases.add(name)
        return params


class DatabaseClient(postgresql.DatabaseClient):
    """``manage.py dbshell`` on the embedded server's socket."""

    @classmethod
    def settings_to_cmd_args_env(cls, settings_dict, parameters):
        settings_dict = {**settings_dict, "HOST": ensure_server()}
        return super().settings_to_cmd_args_env(settings_dict, parameters)


DatabaseWrapper.client_class = DatabaseClient
