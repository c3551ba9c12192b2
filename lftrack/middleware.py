"""Request checks that must happen before any view reads the body."""
from django.conf import settings
from django.http import HttpRequest, HttpResponse

from lftrack.errors import json_error


class ApiBodyLimitMiddleware:
    """413 `request too large` for API bodies over 64 KiB, before a byte of them is read."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith("/api/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                return json_error(400, "invalid Content-Length")
            if length > settings.API_MAX_BODY_BYTES:
                return json_error(413, "request too large")
        return self.get_response(request)
