# One command to run the demo, one to run the tests. Both create .venv on first use and install the
# exact versions of uv.lock into it (uv sync --frozen); `uv lock --upgrade` moves the lock forward.
PYTHON      ?= python3
VENV        ?= .venv
BIN         := $(VENV)/bin
PORT        ?= 8000
PYTEST_ARGS ?=
# Lint caches live in the data folder, so that two test runs side by side (CI) never share one.
LINT_CACHE  ?= $(or $(CPRT_DATA_DIR),var)/lint-cache
# uv from PATH, else a pinned uv installed from PyPI into .uv/ (CI and fresh machines).
UV_VERSION  ?= 0.13.9
UV          ?= $(or $(shell command -v uv 2>/dev/null),$(CURDIR)/.uv/bin/uv)
export UV_PROJECT_ENVIRONMENT := $(abspath $(VENV))
export UV_PYTHON_DOWNLOADS := never
# Compile every installed package to bytecode at install time, as deploy/Dockerfile does: otherwise the
# first page that imports scipy compiles it then (about 11 s of a 12 s cold scoring page).
export UV_COMPILE_BYTECODE := 1

.PHONY: install demo test check-worker worker web ci lock

$(CURDIR)/.uv/bin/uv:
	$(PYTHON) -m venv $(CURDIR)/.uv
	$(CURDIR)/.uv/bin/python -m pip install --quiet "uv==$(UV_VERSION)"

$(VENV)/.installed: pyproject.toml uv.lock | $(UV)
	$(UV) sync --frozen --extra dev --python $(PYTHON)
	touch $@

install: $(VENV)/.installed

## make demo: migrate SQLite, generate demo images and labels, start the web server and a Celery worker (PORT=8000).
demo: install
	$(BIN)/python manage.py run_demo --port $(PORT)

## make demo-fake-provider: the demo plus the project's fake OpenAI-compatible server (a stand-in with synthetic answers), so runs can be launched.
demo-fake-provider: install
	$(BIN)/python manage.py run_demo --port $(PORT) --with-fake-provider

## make test: the whole suite (SQLite by default; set DATABASE_URL and CELERY_BROKER_URL for PostgreSQL + Redis).
test: install
	$(BIN)/lint-imports
	$(BIN)/ruff check --cache-dir $(LINT_CACHE)/ruff .
	$(BIN)/mypy --cache-dir $(LINT_CACHE)/mypy core
	$(BIN)/python -m pytest $(PYTEST_ARGS)

## make check-worker: a real Celery worker receives a task through the configured broker.
check-worker: install
	$(BIN)/python -m pytest tests/core/test_celery_broker.py

worker: install
	$(BIN)/celery -A cprt_site worker --loglevel INFO

web: install
	$(BIN)/python manage.py runserver 127.0.0.1:$(PORT)

## make lock: re-resolve uv.lock after editing pyproject.toml (`uv lock --upgrade` moves every pin forward).
lock: | $(UV)
	$(UV) lock

## make ci: what CI runs (installs Chromium with apt; needs root, PostgreSQL and Redis).
ci:
	bash .ci/run
