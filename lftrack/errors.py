"""The only place that builds `{"error": ...}` bodies: domain errors, the DRF handler and Django's handlers."""

import logging
import math
import sys
from typing import TypeGuard

from django.core.exceptions import PermissionDenied
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions as drf
from rest_framework.response import Response

from lftrack.batching import Abandoned
from lftrack.metrics import BACKEND_ERRORS, labelled

logger = logging.getLogger("lftrack.errors")


class ServiceError(Exception):
    """A rule of the API was broken; `message` is its exact documented text (docs/api.md)."""

    status_code = 422

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class Unprocessable(ServiceError):
    status_code = 422


class BadRequest(ServiceError):
    status_code = 400


class Forbidden(ServiceError):
    status_code = 403


class NotFound(ServiceError):
    status_code = 404


class RateLimited(ServiceError):
    status_code = 429

    def __init__(self, retry_after: float = 60, limit: int | None = None):
        super().__init__("rate_limited")
        self.retry_after = max(1, math.ceil(retry_after))
        self.limit = limit

    def headers(self) -> dict[str, str]:
        headers = {"Retry-After": str(self.retry_after)}
        if self.limit is not None:
            headers.update({"X-RateLimit-Limit": str(self.limit), "X-RateLimit-Remaining": "0"})
        return headers


def error_body(message: str) -> dict[str, str]:
    return {"error": message}


def json_error(status: int, message: str, headers: dict[str, str] | None = None) -> JsonResponse:
    response = JsonResponse(error_body(message), status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


# How long a client should wait before retrying when the database is out of reach.
UNAVAILABLE_RETRY_AFTER = "5"


def database_unavailable(exc: BaseException | None) -> TypeGuard[BaseException]:
    """PostgreSQL could not be reached or did not answer in time: a refused or cut connection, a
    statement_timeout, a lock_timeout, a write abandoned behind a batch that did not return within the
    redirect's deadline (lftrack/batching.py). The request changed nothing (its transaction never committed)."""
    return isinstance(exc, (OperationalError, InterfaceError, Abandoned))


def log_unavailable(request: HttpRequest | None, exc: BaseException) -> None:
    """One line per failure, no traceback: an outage is thousands of identical failures; and a count."""
    labelled(BACKEND_ERRORS, "database").inc()
    logger.warning(
        "database unavailable on %s %s (%s)",
        getattr(request, "method", "?"),
        getattr(request, "path", "?"),
        type(exc.__cause__ or exc).__name__,
    )


def _status_and_message(exc: Exception) -> tuple[int, str, dict[str, str]]:
    if database_unavailable(exc):
        return 503, "service unavailable", {"Retry-After": UNAVAILABLE_RETRY_AFTER}
    if isinstance(exc, RateLimited):
        return 429, exc.message, exc.headers()
    if isinstance(exc, ServiceError):
        return exc.status_code, exc.message, {}
    if isinstance(exc, drf.Throttled):
        # DRF sets `wait` in Throttled.__init__; its stubs leave it out.
        return 429, "rate_limited", {"Retry-After": str(max(1, math.ceil(exc.wait or 60)))}  # type: ignore[attr-defined]
    if isinstance(exc, (drf.NotAuthenticated, drf.AuthenticationFailed)):
        # DRF puts the view's scheme on the exception: Bearer, or Tracking-Key for the pixel's endpoint.
        return 401, "unauthorized", {"WWW-Authenticate": getattr(exc, "auth_header", None) or "Bearer"}
    if isinstance(exc, drf.ParseError):
        return 400, "invalid JSON", {}
    if isinstance(exc, drf.UnsupportedMediaType):
        return 415, "unsupported media type", {}
    if isinstance(exc, drf.MethodNotAllowed):
        return 405, "method not allowed", {}
    if isinstance(exc, (drf.NotFound, Http404)):
        return 404, "not found", {}
    if isinstance(exc, (drf.PermissionDenied, PermissionDenied)):
        return 403, "forbidden", {}
    if isinstance(exc, drf.ValidationError):
        return 422, first_message(exc.detail), {}
    if isinstance(exc, drf.APIException):
        return exc.status_code, str(exc.detail), {}
    return 500, "internal error", {}


def first_message(detail: object) -> str:
    """The first leaf message of a (possibly nested) DRF error structure."""
    while isinstance(detail, (dict, list)) and detail:
        detail = next(iter(detail.values())) if isinstance(detail, dict) else detail[0]
    return str(detail) if detail else "invalid request"


def exception_handler(exc: Exception, context: dict) -> Response:
    """Every API error, including unexpected ones, becomes `{"error": ...}`. DRF's EXCEPTION_HANDLER is
    lftrack.ratelimit.exception_handler, which counts a refused credential against the rate limits first."""
    status, message, headers = _status_and_message(exc)
    if status == 503:
        log_unavailable(context.get("request"), exc)
    if status == 500:
        request = context.get("request")
        # The traceback goes to the log with the route only: no headers, no body (they hold tokens).
        logger.exception(  # noqa: LOG004 (DRF calls the handler inside its except block)
            "unhandled error on %s %s", getattr(request, "method", "?"), getattr(request, "path", "?")
        )
    return Response(error_body(message), status=status, headers=headers)


def _is_api(request: HttpRequest) -> bool:
    """The API and the email providers' webhooks answer JSON errors; the pages answer pages."""
    return request.path.startswith(("/api/", "/hooks/"))


def handler400(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return json_error(400, "bad request")
    return defaults.bad_request(request, exception)


def handler403(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return json_error(403, "forbidden")
    return defaults.permission_denied(request, exception)


def handler404(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return json_error(404, "not found")
    return defaults.page_not_found(request, exception)


def handler500(request: HttpRequest) -> HttpResponse:
    exc = sys.exc_info()[1]  # Django calls this inside its except block
    if database_unavailable(exc):
        log_unavailable(request, exc)
        if _is_api(request):
            return json_error(503, "service unavailable", {"Retry-After": UNAVAILABLE_RETRY_AFTER})
        response = HttpResponse("Service unavailable, try again in a moment.", status=503, content_type="text/plain")
        response["Retry-After"] = UNAVAILABLE_RETRY_AFTER
        return response
    if _is_api(request):
        return json_error(500, "internal error")
    return defaults.server_error(request)


class DropDatabaseOutages(logging.Filter):
    """On django.request: an outage's failures are logged once each by log_unavailable, not as tracebacks."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and database_unavailable(record.exc_info[1]))
