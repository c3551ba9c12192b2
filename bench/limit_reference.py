"""The redirect's limit reference (issue #32): a bare WSGI app that answers GET /l/<key> with one durable INSERT
and a 302, nothing else: no Django, no link lookup, no batching, no rate limit, no user-agent parsing.

    DATABASE_URL=postgres://... gunicorn bench.limit_reference:application --workers 2 --threads 4 --worker-class gthread

What this machine, gunicorn and PostgreSQL do for a stored click before any of lftrack's work; bench/redirect.sh
runs it in turns with lftrack's redirect and prints lftrack's share of it. Each request commits its own row
(autocommit, synchronous_commit as the server has it: on), on a connection per thread (or greenlet).
GET /healthz answers 200 without the database (bench/redirect.sh waits on it).
"""

import os
import secrets
import threading

import psycopg

TABLE = "bench_limit_click"
_local = threading.local()


def _connection() -> psycopg.Connection:
    conn = getattr(_local, "conn", None)
    if conn is None or conn.closed:
        conn = _local.conn = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)
    return conn


def _table() -> None:
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {TABLE} (id bigserial PRIMARY KEY, key text NOT NULL, click_id text NOT NULL,"
            " created_at timestamptz NOT NULL DEFAULT now(), user_agent text NOT NULL)"
        )


_table()


def application(environ, start_response):
    path = environ.get("PATH_INFO", "")
    if path == "/healthz":
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
        return [b"ok"]
    if not path.startswith("/l/"):
        start_response("404 Not Found", [("Content-Length", "0")])
        return []
    click_id = secrets.token_urlsafe(16)
    _connection().execute(
        f"INSERT INTO {TABLE} (key, click_id, user_agent) VALUES (%s, %s, %s)",
        [path[3:], click_id, environ.get("HTTP_USER_AGENT", "")[:512]],
        prepare=True,
    )
    location = f"https://shop.example.com/p?utm_source=bench&lf_cid={click_id}"
    start_response("302 Found", [("Location", location), ("Content-Length", "0"), ("Cache-Control", "no-store")])
    return []
