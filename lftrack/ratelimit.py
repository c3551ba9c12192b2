"""Rate-limit glue: django-ratelimit counters on the shared cache, 429 with Retry-After, X-RateLimit-* headers."""
import logging
from dataclasses import dataclass
from functools import wraps
from typing import Callable

from django.conf import settings
from django.http import HttpRequest
from django_ratelimit.core import get_usage

from lftrack.errors import RateLimited

logger = logging.getLogger("lftrack.ratelimit")


def client_ip(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, or the Nth address from the right of X-Forwarded-For.

    Each of our N trusted proxies appends the address it saw, so anything further left was written
    by the client and must not be trusted (it would let anyone dodge the per-IP limit).
    """
    remote = request.META.get("REMOTE_ADDR", "")
    hops = settings.TRUSTED_PROXY_COUNT
    if hops <= 0:
        return remote
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    return forwarded[-hops] if len(forwarded) >= hops else remote


def token_key(group: str, request) -> str:
    return str(request.auth.pk)


def ip_key(group: str, request) -> str:
    return client_ip(request)


@dataclass(frozen=True)
class Limit:
    group: str
    key: Callable[[str, HttpRequest], str]
    setting: str  # the settings name holding the rate, read per request so operators and tests can change it


def limits_enforce(request: HttpRequest, limits: tuple[Limit, ...]) -> tuple[int, int] | None:
    """Count this request against each limit; raise RateLimited when one is exceeded.

    Returns (limit, remaining) of the tightest limit for the X-RateLimit-* headers. When the cache is
    unreachable the request is let through and a warning logged: losing Redis must not take the API
    down with it.
    """
    tightest = None
    for limit in limits:
        try:
            usage = get_usage(
                request, group=limit.group, key=limit.key, rate=getattr(settings, limit.setting), increment=True
            )
        except Exception as exc:  # redis.ConnectionError, timeouts: fail open
            logger.warning("rate limit %s not enforced: cache unavailable (%s)", limit.group, type(exc).__name__)
            continue
        if usage is None:
            continue
        if usage["should_limit"]:
            raise RateLimited(retry_after=usage["time_left"], limit=usage["limit"])
        remaining = max(0, usage["limit"] - usage["count"])
        if tightest is None or remaining < tightest[1]:
            tightest = (usage["limit"], remaining)
    return tightest


def rate_limit(*limits: Limit):
    """Decorate a ViewSet action: enforce `limits` before it runs, report the tightest in headers."""

    def decorator(action):
        @wraps(action)
        def wrapper(self, request, *args, **kwargs):
            tightest = limits_enforce(request, limits)
            response = action(self, request, *args, **kwargs)
            if tightest is not None:
                response["X-RateLimit-Limit"] = str(tightest[0])
                response["X-RateLimit-Remaining"] = str(tightest[1])
            return response

        return wrapper

    return decorator
