"""Rate limits: fixed-window counters on the shared cache (Redis), 429 with Retry-After, X-RateLimit-* headers.

The counters are our own (key format and windows below), not django-ratelimit's: counting every limit of
a request in one Redis round trip needs their keys, which django-ratelimit keeps private, and its public
get_usage() spends three round trips per limit (ADD, EXISTS, INCR): 0.3 ms per limit on this machine
against 0.1 ms for all of them (docs/benchmarks.md, "Rate limits in one Redis command").

A request refused at authentication counts too: DRF's exception handler is `exception_handler` below,
which counts it and hands over to lftrack/errors.py for the answer.
"""

import functools
import hashlib
import ipaddress
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.http import HttpRequest
from redis.exceptions import NoScriptError
from rest_framework import exceptions as drf
from rest_framework.response import Response

from lftrack import errors
from lftrack.errors import RateLimited
from lftrack.metrics import BACKEND_ERRORS, RATE_LIMITED, labelled
from lftrack.sharedcache import redis_command

logger = logging.getLogger("lftrack.ratelimit")


def client_ip(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, or the Nth address from the right of X-Forwarded-For.

    Each of our N trusted proxies appends the address it saw, so anything further left was written
    by the client and must not be trusted (it would let anyone dodge the per-IP limit).

    By hand, not django-ipware: every API request asks, and ipware took 19 to 27 µs a call against 0.3 µs
    here (187,000 more instructions per conversion request, +5%: docs/benchmarks.md, "Library swaps").
    """
    return address_of(request.META)


def address_of(meta: dict) -> str:
    """client_ip of a request's META (or a WSGI environ: the redirect's path before Django, clicks/wsgi.py)."""
    remote = meta.get("REMOTE_ADDR", "")
    hops = settings.TRUSTED_PROXY_COUNT
    if hops <= 0:
        return remote
    forwarded = [part.strip() for part in meta.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    return forwarded[-hops] if len(forwarded) >= hops else remote


def address_key(address: str) -> str:
    """What per-address limits and lockouts count by: an IPv4 address itself; an IPv6 address by its /64, written
    as the /64's first address (2001:db8:1:2::). One subscriber, one host even, gets a whole /64 and may send from
    any of its 2^64 addresses: counted one by one, they would never reach a limit."""
    if ":" not in address:
        return address  # IPv4, at no cost on the hot path (or junk, counted as it is)
    try:
        ip = ipaddress.IPv6Address(address)
    except ValueError:
        return address
    if ip.ipv4_mapped is not None:  # ::ffff:192.0.2.1, from a dual-stack socket, is 192.0.2.1
        return str(ip.ipv4_mapped)
    return str(ipaddress.IPv6Address(int(ip) >> 64 << 64))


def client_key(request: HttpRequest) -> str:
    """The client's address as limits and lockouts count it (address_key)."""
    return address_key(client_ip(request))


def token_key(group: str, request) -> str:
    return str(request.auth.pk)


def ip_key(group: str, request) -> str:
    return client_key(request)


@dataclass(frozen=True)
class Limit:
    group: str
    key: Callable[[str, HttpRequest], str]
    setting: str  # the settings name holding the rate, read per request so operators and tests can change it


# The read API's limits (GET /api/v1/...): per token, and per address counting refused credentials too, as for the writes.
READ_LIMITS = (Limit("reads-token", token_key, "RATELIMIT_READ_TOKEN"), Limit("reads-ip", ip_key, "RATELIMIT_READ_IP"))


class CircuitBreaker:
    """Stops calling a cache that keeps failing: after `threshold` failures in a row, no call for `pause`
    seconds, then one call tries again. A hung Redis otherwise costs every request its socket timeout
    (0.25 s); with the breaker open the limits fail open at no cost. Per process; logs once per opening.
    """

    def __init__(self, *, threshold: int, pause: float):
        self.threshold, self.pause = threshold, pause
        self._failures = 0
        self._open_until = 0.0
        self._lock = threading.Lock()

    def allows(self) -> bool:
        return time.monotonic() >= self._open_until

    @property
    def is_open(self) -> bool:
        return not self.allows()

    def reset(self) -> None:
        with self._lock:
            self._failures, self._open_until = 0, 0.0

    def succeeded(self) -> None:
        if self._failures:
            with self._lock:
                self._failures = 0

    def failed(self, error: Exception) -> None:
        labelled(BACKEND_ERRORS, "redis").inc()
        with self._lock:
            self._failures += 1
            if self._failures < self.threshold:
                logger.warning("rate limits not enforced: cache unavailable (%s)", type(error).__name__)
                return
            self._failures = 0
            self._open_until = time.monotonic() + self.pause
        logger.warning(
            "rate limits not enforced for %s s: cache failed %s times in a row (%s)",
            self.pause,
            self.threshold,
            type(error).__name__,
        )


breaker = CircuitBreaker(threshold=3, pause=30.0)


def limits_enforce(request: HttpRequest, limits: tuple[Limit, ...]) -> tuple[int, int] | None:
    """Count this request against each limit; raise RateLimited when one is exceeded.

    Returns (limit, remaining) of the tightest limit for the X-RateLimit-* headers. When the cache is
    unreachable the request is let through and a warning logged: losing Redis must not take the API
    down with it.
    """
    if not getattr(settings, "RATELIMIT_ENABLE", True):
        return None
    if not breaker.allows():
        return None
    cache = caches[settings.RATELIMIT_USE_CACHE]
    now = int(time.time())
    if isinstance(cache, RedisCache):
        usages = _redis_usages(request, limits, cache, now)
    else:
        usages = [_cache_usage(_counter(limit, request, now), cache, now) for limit in limits]
    tightest = None
    for limit, usage in zip(limits, usages, strict=False):
        if usage is None:
            continue
        if usage["should_limit"]:
            labelled(RATE_LIMITED, limit.group).inc()
            raise RateLimited(retry_after=usage["time_left"], limit=usage["limit"])
        remaining = max(0, usage["limit"] - usage["count"])
        if tightest is None or remaining < tightest[1]:
            tightest = (usage["limit"], remaining)
    return tightest


_RATE = re.compile(r"^(\d+)/([1-9]\d*)?([smhd])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
EXPIRY_SLACK = 5  # seconds a counter outlives its window, so a slow request still finds it


@functools.lru_cache(maxsize=64)  # read per request from the settings: parse each rate once
def rate_parse(rate: str) -> tuple[int, int]:
    """`"600/m"` -> (600, 60); `"100/5m"` -> (100, 300). ValueError for anything else."""
    match = _RATE.match(rate or "")
    if match is None:
        raise ValueError(f"a rate is N/s, N/m, N/h or N/d (or N/5m ...), got {rate!r}")
    count, multiple, unit = match.groups()
    return int(count), int(multiple or 1) * _UNIT_SECONDS[unit]


def _counter(limit: Limit, request: HttpRequest, now: int) -> tuple[str, int, int, int]:
    """(cache key, limit, expiry, window end) of the counter this request counts against."""
    return _counter_of(limit, limit.key(limit.group, request), now)


def _counter_of(limit: Limit, value: str, now: int) -> tuple[str, int, int, int]:
    """(cache key, limit, expiry, window end) of the counter of `value` (an address, a token id).

    Windows are fixed and aligned to the period; the key holds the group, the rate (a changed rate starts
    a new count), a digest of the value counted by (no client address or token id in Redis's keys) and
    the window.
    """
    count, period = rate_parse(getattr(settings, limit.setting))
    window_end = now - now % period + period
    digest = hashlib.sha256(f"{limit.group}:{count}/{period}:{value}".encode()).hexdigest()
    return f"rl:{digest[:32]}:{window_end}", count, period + EXPIRY_SLACK, window_end


def limit_exceeded(limit: Limit, values: list[str]) -> list[bool]:
    """Count one event for each of `values` (one per request, repeats allowed) against `limit`, all in one
    round trip: for each, whether it went past the limit. Fails open, like limits_enforce.

    For callers that count many requests at once (the redirect's batches of clicks, clicks/services.py).
    """
    if not values or not getattr(settings, "RATELIMIT_ENABLE", True) or not breaker.allows():
        return [False] * len(values)
    cache = caches[settings.RATELIMIT_USE_CACHE]
    now = int(time.time())
    counters = [_counter_of(limit, value, now) for value in values]
    if isinstance(cache, RedisCache):
        usages = _script_usages(counters, cache, now)
    else:
        usages = [_cache_usage(counter, cache, now) for counter in counters]
    over = [usage is not None and usage["should_limit"] for usage in (usages or [None] * len(values))]
    if any(over):
        labelled(RATE_LIMITED, limit.group).inc(sum(over))
    return over


def _cache_usage(counter: tuple[str, int, int, int], cache, now: int) -> dict | None:
    """A cache without scripts (LocMemCache: tests, a single `make run` process): ADD then INCR."""
    key, count, expiry, window_end = counter
    try:
        cache.add(key, 0, expiry)
        used = cache.incr(key)
    except Exception as exc:  # a cache gone away: fail open
        breaker.failed(exc)
        return None
    breaker.succeeded()
    return {"count": used, "limit": count, "should_limit": used > count, "time_left": window_end - now}


# Start each counter's window if it has none (SET NX EX), then count this request (INCR): for all
# limits in one command, so one round trip whatever their number.
_COUNT_SCRIPT = """
local counts = {}
for i, key in ipairs(KEYS) do
  redis.call('SET', key, 0, 'EX', ARGV[i], 'NX')
  counts[i] = redis.call('INCR', key)
end
return counts
"""


def _redis_usages(request: HttpRequest, limits: tuple[Limit, ...], cache: RedisCache, now: int) -> list[dict | None]:
    """Every limit's count in one Redis round trip (the cache's key prefix and version apply)."""
    return _script_usages([_counter(limit, request, now) for limit in limits], cache, now)


def _script_usages(counters: list[tuple[str, int, int, int]], cache: RedisCache, now: int) -> list[dict | None]:
    try:
        used = _count(cache, [cache.make_key(key) for key, *_ in counters], [expiry for _, _, expiry, _ in counters])
    except Exception as exc:  # redis.ConnectionError, timeouts: fail open
        breaker.failed(exc)
        return []
    breaker.succeeded()
    return [
        {"count": n, "limit": count, "should_limit": n > count, "time_left": window_end - now}
        for (_, count, _, window_end), n in zip(counters, used, strict=True)
    ]


def limits_reached(request: HttpRequest, limits: tuple[Limit, ...]) -> RateLimited | None:
    """The limit this request would exceed, without counting it: for doors that count only failures
    (a wrong secret), checked before the attempt and counted after it fails. Fails open like the rest."""
    if not getattr(settings, "RATELIMIT_ENABLE", True) or not breaker.allows():
        return None
    cache = caches[settings.RATELIMIT_USE_CACHE]
    now = int(time.time())
    counters = [_counter(limit, request, now) for limit in limits]
    try:
        used = cache.get_many([key for key, *_ in counters])
    except Exception as exc:  # redis.ConnectionError, timeouts: fail open
        breaker.failed(exc)
        return None
    for limit, (key, count, _, window_end) in zip(limits, counters, strict=True):
        if int(used.get(key) or 0) >= count:
            labelled(RATE_LIMITED, limit.group).inc()
            return RateLimited(retry_after=window_end - now, limit=count)
    return None


_COUNT_SHA = hashlib.sha1(_COUNT_SCRIPT.encode()).hexdigest()


def _count(cache: RedisCache, keys: list[str], expiries: list[int]) -> list[int]:
    """Run the counting script (lftrack/sharedcache.py: a connection kept per thread, 36 µs against 95 µs
    through a redis-py client)."""
    try:
        return redis_command(cache, "EVALSHA", _COUNT_SHA, len(keys), *keys, *expiries)
    except NoScriptError:  # a restarted Redis has forgotten it: EVAL loads it again
        return redis_command(cache, "EVAL", _COUNT_SCRIPT, len(keys), *keys, *expiries)


def rate_limit(*limits: Limit):
    """Decorate a ViewSet action: enforce `limits` before it runs, report the tightest in headers.

    Over a limit: 429 `rate_limited` with Retry-After, and the action does not run (nothing stored).
    """

    def decorator(action):
        @wraps(action)
        def wrapper(self, request, *args, **kwargs):
            tightest = limits_enforce(request, limits)
            try:
                response = action(self, request, *args, **kwargs)
            except Exception as exc:
                # Errors are answers too: render them here (DRF's own handler, so the same body)
                # to give them the same headers.
                response = self.handle_exception(exc)
            if tightest is not None:
                response["X-RateLimit-Limit"] = str(tightest[0])
                response["X-RateLimit-Remaining"] = str(tightest[1])
            return response

        wrapper.limits = limits
        return wrapper

    return decorator


def unauthenticated_count(view, request) -> None:
    """Count a request refused at authentication against its action's per-address limits.

    DRF authenticates before the action, so `rate_limit` never sees a request with a bad or missing
    token or key; without this, a flood of them from one address would cost a lookup each, unlimited.
    Raises RateLimited when the address is over its limit (the 429 then replaces the 401).
    """
    action = getattr(view, getattr(view, "action", None) or "", None)
    limits = tuple(limit for limit in getattr(action, "limits", ()) if limit.key is ip_key)
    if limits:
        limits_enforce(request, limits)


def exception_handler(exc: Exception, context: dict) -> Response:
    """DRF's EXCEPTION_HANDLER (settings.py): a request refused at authentication counts against its action's
    per-address limits first, and over one the 429 replaces the 401; lftrack.errors answers either."""
    if isinstance(exc, (drf.AuthenticationFailed, drf.NotAuthenticated)) and context.get("view") is not None:
        try:
            unauthenticated_count(context["view"], context["request"])
        except RateLimited as limited:
            exc = limited
    return errors.exception_handler(exc, context)
