"""Every environment variable Knowledge Bank reads, each declared once with its type and default.

The settings module, the gunicorn configuration, the embedded PostgreSQL and the commands read
the environment only through :class:`Environment`: ``Environment()["KB_DB_POOL_MAX"]`` is the
parsed value (an ``int``), its default when the variable is unset or blank, and a clear
:class:`InvalidEnvironment` naming the variable when its value cannot be parsed. Asking for an
undeclared name is a ``KeyError``, so a typo fails loudly instead of falling back to a default.

``python -m config.environment`` prints the README's table of variables from this catalogue
(``tests/serving/test_environment.py`` checks that the README lists every one).

Imports nothing from Django: gunicorn's configuration and the settings module read it before
Django is set up. Reading has no side effects.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})


class InvalidEnvironment(ValueError):
    """A variable whose value cannot be read as its declared type."""


def parse_bool(name: str, raw: str) -> bool:
    """``1/true/yes/on`` or ``0/false/no/off`` (any case); anything else is an error."""
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise InvalidEnvironment(f"{name} must be one of 1/true/yes/on or 0/false/no/off; got {raw!r}.")


def _parse_number(name: str, raw: str, kind: type) -> Any:
    try:
        return kind(raw.strip())
    except ValueError:
        noun = "an integer" if kind is int else "a number"
        raise InvalidEnvironment(f"{name} must be {noun}; got {raw!r}.") from None


def _parse_list(name: str, raw: str) -> list[str]:
    return [item.strip() for item in raw.split(",") if item.strip()]


PARSERS = {
    "str": lambda name, raw: raw.strip(),
    "bool": parse_bool,
    "int": lambda name, raw: _parse_number(name, raw, int),
    "float": lambda name, raw: _parse_number(name, raw, float),
    "list": _parse_list,
    "path": lambda name, raw: Path(raw.strip()),
}


@dataclass(frozen=True)
class Variable:
    """One environment variable: its name, type, default (used when unset or blank) and the
    one-line description the README table shows. ``default`` None means "not set": the
    reader decides (a derived default, or the feature is off)."""

    name: str
    kind: str
    default: Any
    doc: str
    section: str

    def read(self, environ: Mapping[str, str]) -> Any:
        raw = environ.get(self.name)
        if raw is None or raw.strip() == "":
            return list(self.default) if isinstance(self.default, list | tuple) else self.default
        return PARSERS[self.kind](self.name, raw)


def _section(section: str, *rows: tuple[str, str, Any, str]) -> list[Variable]:
    return [Variable(name, kind, default, doc, section) for name, kind, default, doc in rows]


CPU_WORKERS = (os.cpu_count() or 1) + 1
REPLICA_ROUTES = ["bank-query", "traverse", "search-ppr", "search-facts", "recall-anchors",
                  "bank-context"]  # fmt: skip

VARIABLES: tuple[Variable, ...] = tuple(
    _section(
        "Django",
        ("DJANGO_SETTINGS_MODULE", "str", "config.settings", "The settings module (manage.py, asgi, wsgi, Celery and pytest set it)."),
        ("DJANGO_SECRET_KEY", "str", "", "The secret key; unset, the settings read `KB_RUNDIR/secret_key`, which `make setup` (`python -m config.serving.secret`) generates once for the checkout's processes; with neither, only development (`DJANGO_DEBUG`) and tests start (a key per process)."),
        ("DJANGO_DEBUG", "bool", False, "Django's DEBUG (`make dev` turns it on)."),
        ("DJANGO_ALLOWED_HOSTS", "list", ["127.0.0.1", "localhost", "testserver"], "Host names the site answers (comma-separated)."),
        ("DJANGO_CSRF_TRUSTED_ORIGINS", "list", [], "Origins trusted for CSRF (comma-separated, with scheme), e.g. behind a proxy."),
        ("KB_RUNDIR", "path", BASE_DIR / ".run", "Runtime state of this checkout: embedded-server lock, secret key, file cache, metrics samples."),
        ("KB_STATIC_ROOT", "path", BASE_DIR / "staticfiles", "Where `collectstatic` puts the static files WhiteNoise serves."),
    )
    + _section(
        "Database",
        ("DATABASE_URL", "str", "", "PostgreSQL with pgvector (`postgres://…`); unset, the embedded server of this checkout."),
        ("DATABASE_REPLICA_URLS", "list", [], "Read replicas (comma-separated URLs) for the read-only endpoints."),
        ("KB_DATABASE_NAME", "str", "kb", "Database name on the embedded server."),
        ("KB_PGDATA", "path", BASE_DIR / ".pgdata", "Data directory of the embedded server."),
        ("KB_PG_SHARED_BUFFERS", "str", "1GB", "`shared_buffers` of a freshly created embedded server."),
        ("KB_PG_MAINTENANCE_WORK_MEM", "str", "1GB", "`maintenance_work_mem` of a freshly created embedded server."),
        ("KB_HNSW_EF_SEARCH", "int", 200, "pgvector's `hnsw.ef_search` on every connection (recall against latency)."),
        ("KB_PREPARED_STATEMENTS", "bool", True, "Prepare the fold's two statements on the server (generic plan); off behind a pooler that cannot keep them."),
        ("KB_DB_POOL", "bool", False, "A bounded psycopg pool per process (on under gunicorn)."),
        ("KB_DB_POOL_MIN", "int", 2, "Connections a pool keeps open."),
        ("KB_DB_POOL_MAX", "int", 8, "Most connections one process holds."),
        ("KB_DB_POOL_TIMEOUT", "float", 5.0, "Seconds a request waits for a pooled connection before it is answered 503."),
        ("KB_DB_CONNECT_TIMEOUT", "int", 5, "Seconds to wait for a new database connection."),
        ("KB_DB_APPLICATION_NAME", "str", "kb", "`application_name` of this process's sessions (`kb-web`, `kb-worker`)."),
        ("KB_REPLICA_READ_ROUTES", "list", REPLICA_ROUTES, "URL names whose GETs may read from a replica."),
        ("KB_REPLICA_PIN_SECONDS", "int", 5, "After a write, the same caller reads from the primary for this long."),
    )
    + _section(
        "Serving",
        ("PORT", "int", 8000, "Port of `make run` / gunicorn."),
        ("KB_BIND", "str", "127.0.0.1", "Address gunicorn binds (0.0.0.0 behind a load balancer)."),
        ("KB_WEB_WORKERS", "int", CPU_WORKERS, "gunicorn worker processes (default: cores + 1)."),
        ("KB_WEB_TIMEOUT", "int", 120, "Seconds a request may take before gunicorn restarts its worker."),
        ("KB_WEB_MAX_CONNECTIONS", "int", 200, "Open connections per process past which uvicorn answers 503 at once."),
        ("KB_GUNICORN_LOG_LEVEL", "str", "info", "gunicorn's own log level."),
        ("KB_TORCH_THREADS", "int", 1, "torch threads per served process (sets `OMP_NUM_THREADS`)."),
        ("KB_WARM_EMBEDDER", "bool", True, "Load both embedding models (writes' float, queries' int8) before a web worker takes requests."),
        ("PROMETHEUS_MULTIPROC_DIR", "path", None, "Metrics samples of the served processes (gunicorn sets `KB_RUNDIR/prometheus-<bind>`)."),
        ("KB_LOG_FORMAT", "str", "json", "`json` (one object a line with request id, actor, bank, operation) or `text`."),
        ("KB_LOG_LEVEL", "str", "INFO", "Level of the application's loggers."),
        ("KB_CACHE_URL", "str", "", "Redis (`redis://…`) for state shared across machines (login throttling, replica pins); unset, a file cache in `KB_RUNDIR`."),
        ("KB_METRICS_TOKEN", "str", "", "Bearer token that may read `/metrics` (staff sessions always may)."),
        ("KB_METRICS_QUEUES", "list", None, "Celery queues whose depth `/metrics` reports (default: the default queue)."),
        ("KB_UNAVAILABLE_RETRY_AFTER", "int", 5, "`Retry-After` seconds of a 503 when the database is away."),
    )
    + _section(
        "Security",
        ("KB_HTTPS", "bool", False, "Users reach the site over HTTPS: secure cookies, HSTS, the proxy's scheme trusted."),
        ("KB_HSTS_SECONDS", "int", 31536000, "HSTS max-age when `KB_HTTPS` is on."),
        ("KB_HSTS_INCLUDE_SUBDOMAINS", "bool", False, "HSTS includeSubDomains."),
        ("KB_SSL_REDIRECT", "bool", False, "Redirect HTTP to HTTPS (with `KB_HTTPS`; health checks exempt)."),
        ("KB_TRUST_X_FORWARDED_PROTO", "bool", None, "Trust `X-Forwarded-Proto: https` from the proxy (default: `KB_HTTPS`)."),
        ("KB_TRUST_X_FORWARDED_FOR", "bool", False, "Count admin logins by the client `X-Forwarded-For` names."),
        ("KB_CSP", "str", "", "The Content-Security-Policy of HTML pages (`{nonce}` is replaced per request); unset, a strict same-origin policy."),
        ("KB_CSP_REPORT_ONLY", "bool", False, "Send the policy as Content-Security-Policy-Report-Only."),
        ("KB_ADMIN_LOGIN_MAX_PER_USER", "int", 5, "Failed admin logins allowed per window for one username."),
        ("KB_ADMIN_LOGIN_MAX_PER_ADDRESS", "int", 20, "Failed admin logins allowed per window for one client address."),
        ("KB_ADMIN_LOGIN_WINDOW", "int", 900, "The login-throttling window, seconds."),
        ("KB_ADMIN_USER", "str", "admin", "Username `ensure_admin` (`make run`) creates."),
        ("KB_ADMIN_PASSWORD", "str", "", "Its password; unset, one is generated and printed once."),
    )
    + _section(
        "Limits",
        ("KB_MAX_BODY_BYTES", "int", 2 * 1024 * 1024, "Largest API request body (413 past it)."),
        ("KB_MAX_IMPORT_BYTES", "int", 64 * 1024 * 1024, "Largest import upload."),
        ("KB_MAX_JSON_DEPTH", "int", 32, "Deepest JSON nesting of a body or import line (400 `too_deep`)."),
        ("KB_MAX_URL_BYTES", "int", 8192, "Longest API URL, path and query (414)."),
        ("KB_MAX_HEADER_BYTES", "int", 16384, "Most header bytes of an API request (431)."),
        ("KB_RATE_LIMIT_PER_MINUTE", "int", 600, "Requests per minute per token (0: off)."),
        ("KB_RATE_LIMIT_WRITES_PER_MINUTE", "int", 120, "Writes per minute per token (0: off)."),
    )
    + _section(
        "Jobs",
        ("CELERY_BROKER_URL", "str", "", "The broker (`redis://…`); unset, tasks run eagerly in-process."),
        ("CELERY_RESULT_BACKEND", "str", "", "Celery's result backend (unset: none)."),
        ("CELERY_TASK_DEFAULT_QUEUE", "str", "celery", "The queue tasks go to."),
        ("KB_STOP_TIMEOUT", "int", 60, "Seconds `make run`'s runner gives the worker on Ctrl-C to finish its tasks in flight before it cancels them (back to the queue)."),
        ("KB_CELERY_VISIBILITY_TIMEOUT", "int", 3600, "Seconds before Redis redelivers an unacknowledged task (above the longest import)."),
        ("WORKFLOWS_REGENERATE_COUNTDOWN", "int", 30, "Seconds after an edit before a process's gap report is regenerated (a burst regenerates once)."),
        ("KB_LAYOUT_SYNC_MAX", "int", 2000, "Banks up to this many entries are laid out inside the first graph request."),
        ("KB_EXPLORER_OVERVIEW_MIN", "int", 5000, "Banks with more entries open the explorer on the community overview."),
        ("KB_EXPLORER_DRILL_MAX", "int", 1000, "At most this many entries in an explorer drill-down (a community or an answer's neighbourhood)."),
        ("KB_LAYOUT_COUNTDOWN", "int", 30, "Seconds after an edit before the layout refresh job runs (debounce)."),
        ("KB_LAYOUT_AUTO_REFRESH", "bool", None, "Edits schedule a layout refresh (default: when a broker runs jobs)."),
    )
    + _section(
        "Embedding and extraction",
        ("KB_EMBEDDER", "str", "minilm", "`minilm` (local all-MiniLM-L6-v2), `openai` (an OpenAI-compatible /embeddings endpoint) or `hashing` (tests only)."),
        ("KB_EMBEDDING_DIM", "int", 384, "Vector dimension (the columns are 384)."),
        ("KB_QUERY_EMBEDDING_CACHE", "int", 2048, "Query vectors cached per process (0: off)."),
        ("KB_EMBED_BATCH_SIZE", "int", 512, "Entries per stored embedding batch (their texts go to the model in one call: the larger the call, the less padding)."),
        ("KB_EMBEDDING_RUNTIME", "str", "onnx", "The local model's runtime: `onnx` (the graph exported at set-up, run by ONNX Runtime; PyTorch when the export is missing) or `torch`."),
        ("KB_ONNX_MODEL_DIR", "str", "", "Where the exported ONNX model lives (blank: `.models/` in the checkout)."),
        ("KB_ONNX_THREADS", "int", 0, "Intra-op threads of the ONNX session (0: `OMP_NUM_THREADS` when set, else the cores)."),
        ("KB_ONNX_BATCH_SIZE", "int", 32, "Texts per ONNX model call."),
        ("KB_ONNX_QUERY_INT8", "bool", True, "Embed query texts with the int8-quantised model (made at set-up by `export_onnx_model`): about 1.7x faster, vectors 0.9991-0.9999 cosine to the float model's (texts under 6 word pieces: the float model's), held-out suites unchanged; stored vectors stay float. 0: queries use the float model."),
        ("KB_ONNX_TOKEN_BUDGET", "int", 4096, "Padded word pieces per ONNX model call at most (texts of similar length are batched together)."),
        ("OMP_NUM_THREADS", "int", 0, "Threads of the numeric libraries (the gunicorn configuration sets it from `KB_TORCH_THREADS`; 0: unset)."),
        ("KB_BANK_VECTOR_INDEX_AT", "int", 20000, "Vectors at which a bank gets HNSW indexes of its own."),
        ("KB_OPENAI_EMBEDDINGS_URL", "str", "", "The `openai` embedder's endpoint."),
        ("KB_OPENAI_EMBEDDINGS_MODEL", "str", "text-embedding-3-small", "Its model."),
        ("KB_OPENAI_API_KEY", "str", "", "Its key (also the extractor's, unless `KB_EXTRACT_LLM_KEY`)."),
        ("KB_SIMILAR_MIN", "float", 0.75, "Cosine from which existing entries are listed as `similar` on a write."),
        ("KB_DUPLICATE_MIN", "float", 0.92, "Cosine from which a write also carries a duplicate warning."),
        ("KB_DUPLICATE_REFUSE_MIN", "float", 0.92, "A new entry at least this close (content vectors, same numbers stated) to an existing one is refused with 409 duplicate_entry unless allow_duplicate."),
        ("KB_EXTRACT_LLM_URL", "str", "", "OpenAI-compatible chat-completions base (…/v1) of the `llm` extractor; unset, only `local`."),
        ("KB_EXTRACT_LLM_MODEL", "str", "gpt-4o-mini", "The extractor's model."),
        ("KB_EXTRACT_LLM_KEY", "str", "", "The extractor's key (else `KB_OPENAI_API_KEY`)."),
        ("KB_EXTRACT_LLM_TIMEOUT", "float", 30.0, "Seconds per extractor request."),
        ("KB_EXTRACT_LLM_ATTEMPTS", "int", 4, "Attempts per extractor request."),
        ("KB_EXTRACT_LLM_BACKOFF", "float", 1.0, "First retry delay, seconds (doubles)."),
        ("KB_EXTRACT_LLM_MAX_WAIT", "float", 30.0, "Longest wait between attempts, seconds."),
        ("KB_EXTRACT_LLM_JSON_MODE", "bool", True, "Ask the endpoint for a JSON response format."),
        ("KB_EXTRACT_LLM_GLEANING", "bool", True, "A second pass asks for relationships the first missed."),
    )
    + _section(
        "Commands",
        ("KB_TOKEN", "str", "", "The agent token `manage.py mcp` (stdio MCP) acts as, unless `--token`."),
    )
)  # fmt: skip

CATALOGUE: dict[str, Variable] = {v.name: v for v in VARIABLES}


class Environment:
    """The environment read once: every declared variable parsed to its type, or its default."""

    def __init__(self, environ: Mapping[str, str] | None = None):
        source = os.environ if environ is None else environ
        self._values = {v.name: v.read(source) for v in VARIABLES}

    def __getitem__(self, name: str) -> Any:
        return self._values[name]


def markdown_table() -> str:
    """The README's table: one row per variable, grouped by section."""
    lines = ["| Variable | Default | What it does |", "| --- | --- | --- |"]
    for section in dict.fromkeys(v.section for v in VARIABLES):
        lines.append(f"| **{section}** | | |")
        for v in (v for v in VARIABLES if v.section == section):
            lines.append(f"| `{v.name}` | {_shown_default(v)} | {v.doc} |")
    return "\n".join(lines)


def _shown_default(v: Variable) -> str:
    if v.default is None or v.default == "" or v.default == []:
        return "unset"
    if v.name == "KB_WEB_WORKERS":
        return "cores + 1"
    if isinstance(v.default, Path):
        return f"`{v.default.relative_to(BASE_DIR)}`"
    if isinstance(v.default, bool):
        return "on" if v.default else "off"
    if isinstance(v.default, list):
        return "`" + ",".join(v.default) + "`"
    return f"`{v.default}`"


if __name__ == "__main__":
    print(markdown_table())
