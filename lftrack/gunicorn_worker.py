"""gunicorn's worker for the redirect pool, and its logger for both pools (gunicorn.conf.py).

The worker is gevent's, with each client connection's database connections closed when that client
connection ends.

Django keeps a database connection per thread, which under gevent is per greenlet, and gunicorn gives each
client connection a greenlet of its own. Left to the garbage collector, the connection of a greenlet whose
client went away stayed open a while: as clients came and went, PostgreSQL's backends outnumbered the
greenlets, and `wrk -c64` on two processes ran PostgreSQL out of connections (docs/deployment.md, "gunicorn").
"""

import logging

from gunicorn import glogging
from gunicorn.workers.ggevent import GeventWorker as _GeventWorker


class GeventWorker(_GeventWorker):
    def handle(self, listener, client, addr):
        try:
            super().handle(listener, client, addr)
        finally:
            # Imported here, after the worker has monkey-patched the standard library: the master loads this
            # class, and Django's per-thread connections must be made per greenlet.
            from django.db import connections

            connections.close_all()  # this greenlet's only


class Logger(glogging.Logger):
    """gunicorn's logger, building a request's access line only when the access log is on: with a logging
    configuration, gunicorn builds every request's line for a logger that drops it (GUNICORN_ACCESS_LOG off),
    4% of a redirect's worker time (docs/benchmarks.md, "The redirect before Django's handler")."""

    def access(self, resp, req, environ, request_time):
        if self.access_log.isEnabledFor(logging.INFO):
            super().access(resp, req, environ, request_time)
