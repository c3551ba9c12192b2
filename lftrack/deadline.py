"""Request deadlines on the database: a request still waiting on PostgreSQL past REQUEST_DEADLINE seconds
has its database connection cut, so it answers 503 at once instead of whenever the server comes back.

statement_timeout and lock_timeout (lftrack/settings.py) bound what a live server does; they cannot
help when the server or the network in between stops answering altogether (a frozen host, a stuck
proxy), and psycopg has no client-side timeout for a query in flight. A watchdog thread per process
then shuts the socket of the request's connection down: the request's wait ends with an
OperationalError (answered 503 by lftrack/errors.py), and the server, which never received a COMMIT,
rolls the transaction back. Only a deadline that falls while a COMMIT is on its way leaves the
outcome unknown to us.
"""

import logging
import os
import socket
import threading
import time

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

from lftrack.metrics import DEADLINE_CUTS

logger = logging.getLogger("lftrack.deadline")

_CHECK_EVERY = 0.25  # seconds; a request is cut at most this late


class _Watchdog:
    def __init__(self):
        self._requests: dict[int, tuple[float, object]] = {}  # thread id -> (deadline, its DatabaseWrapper)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def watch(self, deadline: float) -> None:
        with self._lock:
            self._requests[threading.get_ident()] = (deadline, connections[DEFAULT_DB_ALIAS])
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="lftrack-deadline", daemon=True)
                self._thread.start()

    def forget(self) -> None:
        with self._lock:
            self._requests.pop(threading.get_ident(), None)

    def _run(self) -> None:
        while True:
            time.sleep(_CHECK_EVERY)
            now = time.monotonic()
            with self._lock:
                # A late request without an open connection stays watched, and is cut once it opens one: a
                # new thread (under gevent, every new client connection's greenlet) has none until its
                # first query, which may be the one to wait on a lock (tests/test_deadline.py).
                for ident, (deadline, db) in list(self._requests.items()):
                    if deadline <= now and _cut(db):
                        del self._requests[ident]


def _cut(db) -> bool:
    """Shut the connection's socket down (a duplicate of it: its owner closes the original); False when it
    has no open connection to cut."""
    raw = getattr(db, "connection", None)
    if raw is None or raw.closed:
        return False
    try:
        duplicate = socket.socket(fileno=os.dup(raw.pgconn.socket))
    except Exception:  # closed or broken in between: nothing left to cut
        return True
    with duplicate:
        try:
            duplicate.shutdown(socket.SHUT_RDWR)
        except OSError:
            return True
    DEADLINE_CUTS.inc()
    logger.warning("database deadline passed: connection cut", extra={"deadline_seconds": settings.REQUEST_DEADLINE})
    return True


watchdog = _Watchdog()


class DeadlineMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        # The redirect has a shorter one: a visitor waits for it, and it can redirect without the database.
        deadline = settings.REDIRECT_DEADLINE if request.path.startswith("/l/") else settings.REQUEST_DEADLINE
        if not deadline:
            return self.get_response(request)
        watchdog.watch(time.monotonic() + deadline)
        try:
            return self.get_response(request)
        finally:
            watchdog.forget()
