"""The redirect pool's worker (lftrack/gunicorn_worker.py): a client connection's database connection ends with
it, so clients that come and go never add up to PostgreSQL's max_connections."""

import socket
import struct
from urllib.parse import urlsplit

import psycopg
import pytest

from tests.conftest import database_url
from tests.factories import LinkFactory
from tests.faults.conftest import running_gunicorn

pytestmark = [pytest.mark.fault, pytest.mark.django_db(transaction=True)]

CLIENTS = 32  # connections open at once, in each of ROUNDS rounds
ROUNDS = 4


def backends() -> int:
    with psycopg.connect(database_url(), autocommit=True) as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()[0]


def clicks_then_reset(base: str, key: str) -> None:
    """CLIENTS connections each click once and wait for the answer, then all go at once with a reset, as a
    load generator or a crowd of phones leaves (SO_LINGER 0: an RST, no FIN)."""
    host, port = urlsplit(base).hostname, urlsplit(base).port
    request = f"GET /l/{key} HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: Mozilla/5.0\r\n\r\n".encode()
    sockets = [socket.create_connection((host, port), timeout=10) for _ in range(CLIENTS)]
    for sock in sockets:
        sock.sendall(request)
    for sock in sockets:
        assert sock.recv(4096).startswith(b"HTTP/1.1 302")
    for sock in sockets:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()


def test_clients_that_come_and_go_leave_no_database_connection_behind(acme):
    link = LinkFactory(post__workspace=acme)
    with running_gunicorn(database=database_url()) as (base, _):
        before = backends()
        counts = []
        for _ in range(ROUNDS):
            clicks_then_reset(base, link.key)
            counts.append(backends() - before)
        # Each round's clients have gone: what they held is closed, whatever rounds came before.
        assert max(counts) <= 2, counts
