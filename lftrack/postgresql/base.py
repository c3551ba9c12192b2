"""Django's PostgreSQL backend with a health check that costs no round trip (`ENGINE = "lftrack.postgresql"`)."""

import select

from django.db.backends.postgresql import base
from gevent.monkey import get_original

# The poll of the C library even under gevent's monkey-patching: a poll(0) never blocks, and gevent's own
# cost every request's health check 10 µs more (docs/benchmarks.md, "The redirect before Django's handler").
_poll = get_original("select", "poll")


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        """Whether the persistent connection can take the request's queries, asked of the socket, not the server.

        Django's own check runs `SELECT 1` at the start of every request (CONN_HEALTH_CHECKS): a round trip
        per API call. Between requests an idle connection receives nothing, unless the server is dropping it:
        a restart, a failover or pg_terminate_backend send a termination notice and close, and a crashed
        server's kernel closes the socket. Either leaves the socket readable, which poll() sees at once.
        A connection cut silently on the network is caught by neither check until TCP gives up.
        """
        connection = self.connection
        if connection is None or connection.closed or connection.broken:
            return False
        try:
            poller = _poll()
            poller.register(connection.fileno(), select.POLLIN)
            return not poller.poll(0)
        except (OSError, ValueError):
            return False
