"""Operational endpoints that belong to no app."""
import logging

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

logger = logging.getLogger("lftrack.health")


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """200 when the database answers (and Redis, when configured), 503 otherwise: for load balancers."""
    checks = {"database": _database_ok()}
    if settings.REDIS_URL:
        checks["redis"] = _redis_ok()
    failed = [name for name, ok in checks.items() if not ok]
    if failed:
        logger.warning("health check failed", extra={"failed": failed})
        return JsonResponse({"status": "unavailable", "failed": failed}, status=503)
    return JsonResponse({"status": "ok"})


def _database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception:
        return False
    return True


def _redis_ok() -> bool:
    try:
        cache.set("lftrack:healthz", "1", timeout=10)
        return cache.get("lftrack:healthz") == "1"
    except Exception:
        return False
