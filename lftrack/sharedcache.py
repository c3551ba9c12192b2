"""The shared cache's Redis, for the few commands hot paths send: a connection per thread, kept for its life.

Neither Django's cache API nor a redis-py client: Django's RedisCache builds a new redis.Redis for every
operation (its constructor fills ~170 response callbacks, ~0.3 ms here), and even a kept client's call
(connection pool, retries, response callbacks) cost 95 µs of CPU against 36 µs for the same EVALSHA
sent on a redis-py Connection taken once from the cache's pool (docs/benchmarks.md, "A kept Redis connection").
Each thread has its own cache object (Django's caches are per thread), so no connection is shared.
"""

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache


def redis_cache() -> RedisCache | None:
    """The shared cache when it is Redis (REDIS_URL); None for a per-process cache, which nothing can share."""
    cache = caches[settings.RATELIMIT_USE_CACHE]
    return cache if isinstance(cache, RedisCache) else None


def redis_command(cache: RedisCache, *args):
    """Send one command on this thread's connection and return its reply; a failure (a timeout, a refused
    connection, an error reply) is raised, and the next command reconnects."""
    backend = cache._cache
    connection = getattr(backend, "_lftrack_connection", None)
    if connection is None:
        connection = backend._lftrack_connection = backend.get_client(write=True).connection_pool.get_connection()
    try:
        connection.send_command(*args)
        return connection.read_response()
    except Exception:
        connection.disconnect()
        raise
