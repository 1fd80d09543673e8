# One command to run the demo, one to run the tests. Both create .venv and install on first use.
PYTHON      ?= python3
VENV        ?= .venv
BIN         := $(VENV)/bin
PORT        ?= 8000
PYTEST_ARGS ?=

.PHONY: install demo test check-worker worker web ci

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --upgrade pip >/dev/null
	$(BIN)/python -m pip install -e '.[dev]'
	touch $@

install: $(VENV)/.installed

## make demo: migrate SQLite, generate demo images and labels, start the web server and a Celery worker (PORT=8000).
demo: install
	$(BIN)/python manage.py run_demo --port $(PORT)

## make test: the whole suite (SQLite by default; set DATABASE_URL and CELERY_BROKER_URL for PostgreSQL + Redis).
test: install
	$(BIN)/lint-imports
	$(BIN)/python -m pytest $(PYTEST_ARGS)

## make check-worker: a real Celery worker receives a task through the configured broker.
check-worker: install
	$(BIN)/python -m pytest tests/core/test_celery_broker.py

worker: install
	$(BIN)/celery -A cprt_site worker --loglevel INFO

web: install
	$(BIN)/python manage.py runserver 127.0.0.1:$(PORT)

## make ci: what CI runs (installs Chromium with apt; needs root, PostgreSQL and Redis).
ci:
	bash .ci/run
