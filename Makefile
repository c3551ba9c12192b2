# The two commands of the quick start: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# make run always uses the embedded SQLite database and DEBUG, whatever the shell exports.
RUN_ENV := DEBUG=1 DATABASE_URL=sqlite:///$(CURDIR)/db.sqlite3

.PHONY: run test install clean openapi

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(RUN_ENV) $(PY) manage.py migrate --noinput
	@$(RUN_ENV) $(PY) manage.py demo | $(PY) -m json.tool
	$(RUN_ENV) $(PY) manage.py runserver 127.0.0.1:8000

# With DATABASE_URL set the suite runs on PostgreSQL; without it, on SQLite.
test: $(STAMP)
	$(PY) -m pytest

# Rewrites docs/openapi.json from the code; tests/test_openapi.py fails until it is refreshed and committed.
openapi: $(STAMP)
	DEBUG=1 $(PY) manage.py spectacular --format openapi-json --validate --fail-on-warn --file docs/openapi.json

clean:
	rm -rf $(VENV) db.sqlite3
