"""Pages that belong to no app: the home page, liveness and readiness for load balancers, metrics for Prometheus."""

import hmac
import logging
import threading

from django.conf import settings
from django.core.cache import cache
from django.db import connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_safe

from lftrack.errors import RateLimited, json_error
from lftrack.metrics import exposition
from lftrack.ratelimit import Limit, breaker, ip_key, limits_enforce, limits_reached
from lftrack.version import VERSION

logger = logging.getLogger("lftrack.health")

# One database probe at a time per process: a probe stuck on a frozen database is left behind (its
# thread ends when the connection does), and the probes after it answer 503 at once instead of piling up.
_probe_running = threading.Lock()


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    """What this service is, where its back office and API document are, and the pixel's snippet."""
    return render(request, "home.html", {"base_url": settings.PUBLIC_BASE_URL})


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness: the process answers, and which release it runs (a rolling deploy is done when every node
    says the new one). Nothing else is asked, so a dependency's outage never makes an orchestrator restart
    every node at once."""
    return JsonResponse({"status": "ok", "version": VERSION})


# Wrong or missing tokens per address: a guesser is stopped long before a 32-character token could fall.
METRICS_FAILURES_PER_IP = (Limit("metrics-failures-ip", ip_key, "RATELIMIT_METRICS_FAILURES_IP"),)


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus's scrape (docs/metrics.md): 404 while METRICS_TOKEN is unset; with it, 401 without
    `Authorization: Bearer <METRICS_TOKEN>` (compared in constant time), 429 after too many wrong ones."""
    token = settings.METRICS_TOKEN
    if not token:
        return json_error(404, "not found")
    try:
        if (limited := limits_reached(request, METRICS_FAILURES_PER_IP)) is not None:
            raise limited
        supplied = request.headers.get("Authorization", "").encode()
        if not hmac.compare_digest(supplied, f"Bearer {token}".encode()):
            limits_enforce(request, METRICS_FAILURES_PER_IP)  # raises RateLimited past the limit
            return json_error(401, "invalid token", {"WWW-Authenticate": "Bearer"})
    except RateLimited as limited:
        return json_error(429, limited.message, limited.headers())
    return HttpResponse(exposition(), content_type="text/plain; version=0.0.4; charset=utf-8")


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """Readiness, for the load balancer: 200 when PostgreSQL answers within READY_TIMEOUT seconds, 503
    otherwise. Redis is reported but not required: without it the rate limits fail open and the API works."""
    database = _database_answers(settings.READY_TIMEOUT)
    body = {"status": "ok" if database else "unavailable", "database": "ok" if database else "unavailable"}
    if settings.REDIS_URL:
        body["redis"] = "ok" if _redis_answers() else "unavailable"
    if not database:
        logger.warning("not ready: database unavailable")
        return JsonResponse(body, status=503, headers={"Retry-After": "5"})
    return JsonResponse(body)


def _database_answers(timeout: float) -> bool:
    if not _probe_running.acquire(blocking=False):
        return False
    answered = threading.Event()

    def probe() -> None:
        try:
            with connections["default"].cursor() as cursor:
                cursor.execute("SELECT 1")
            answered.set()
        except Exception:
            pass
        finally:
            connections["default"].close()  # the probe's own connection, in its own thread
            _probe_running.release()

    threading.Thread(target=probe, daemon=True, name="readyz-probe").start()
    return answered.wait(timeout)


def _redis_answers() -> bool:
    if breaker.is_open:
        return False
    try:
        cache.set("lftrack:readyz", "1", timeout=10)
        return cache.get("lftrack:readyz") == "1"
    except Exception:
        return False
