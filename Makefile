# One command to run the demo, one to run the tests. Both create .venv and install on first use.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: install demo test worker web

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --upgrade pip >/dev/null
	$(BIN)/python -m pip install -e '.[dev]'
	touch $@

install: $(VENV)/.installed

## make demo: migrate SQLite, generate demo images and labels, start the web server and a Celery worker.
demo: install
	$(BIN)/python manage.py run_demo

## make test: the whole suite (SQLite by default; set DATABASE_URL and CELERY_BROKER_URL for PostgreSQL + Redis).
test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

worker: install
	$(BIN)/celery -A cprt_site worker --loglevel INFO

web: install
	$(BIN)/python manage.py runserver
