"""The project's wiring: settings (read from ``config/environment.py``), URLs, ASGI/WSGI, Celery,
gunicorn, the embedded PostgreSQL backend and the serving layer.

Lives here: how the apps are assembled and served. Must not live here: domain rules (they
belong to ``kb``, ``graph``, ``workflows``), or any read of the environment outside
``config/environment.py``.
"""

from .celery import app as celery_app

__all__ = ("celery_app",)
