"""Request checks that run before any view: oversized API bodies, unstorable URLs and headers."""
from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

from lftrack.errors import json_error


class RequestGuardMiddleware:
    """413 for API bodies over 64 KiB (before a byte is read); 400 for a NUL in the path, the query or an API
    request's header (the redirect strips it from the User-Agent it stores instead: a click is never lost).

    PostgreSQL refuses NUL in text, so a NUL reaching any lookup (a link key, an admin search box, the
    pixel's X-Tracking-Key or Origin) would otherwise surface as a 500.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        is_api = request.path.startswith("/api/")
        if "\x00" in request.path or "%00" in request.META.get("QUERY_STRING", ""):
            return json_error(400, "bad request") if is_api else HttpResponseBadRequest("Bad request")
        if is_api:
            if _nul_in_headers(request):
                return json_error(400, "bad request")
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                return json_error(400, "bad request")
            if length > settings.API_MAX_BODY_BYTES:
                return json_error(413, "request too large")
        return self.get_response(request)


def _nul_in_headers(request: HttpRequest) -> bool:
    # gunicorn refuses NUL in header values; other servers (and in-process clients) pass it on.
    return any("\x00" in value for key, value in request.META.items() if key.startswith("HTTP_") and isinstance(value, str))
