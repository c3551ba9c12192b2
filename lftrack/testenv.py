"""Pytest plugin loaded before pytest-django reads settings: the environment the suite runs in."""

import os

# pytest-django imports settings before any conftest runs; DEBUG is off in tests, so a key is required.
os.environ.setdefault("SECRET_KEY", "insecure-key-for-the-test-suite-only")
# Live-server and thread tests must not leave persistent connections behind: PostgreSQL refuses
# to drop a test database that still has sessions.
os.environ.setdefault("CONN_MAX_AGE", "0")
# The commands the suite starts (manage.py ...) get the suite's environment, never the checkout's `.env`
# from `make run` (its DEBUG=1 would differ from CI); a test that wants a file names it in ENV_FILE.
os.environ.setdefault("ENV_FILE", "")
