"""Request checks that run before any view (oversized API bodies, chunked bodies, unstorable URLs and headers),
the health probes answered before the host check, and the session, user and message middleware for the pages only."""

import io

from django.conf import settings
from django.contrib.auth import middleware as auth
from django.contrib.messages import middleware as messages
from django.contrib.sessions import middleware as sessions
from django.core.handlers.wsgi import LimitedStream
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

from lftrack.errors import json_error
from lftrack.views import healthz, metrics, readyz

# A refused body is read and dropped up to this much, so the client's next request on the same
# keep-alive connection is read from where it starts (gunicorn itself drains only 64 KiB, then closes
# a connection it has just answered "keep-alive" on, and a pooled client's next request fails).
# Bigger bodies still end with the connection closed; the front proxy refuses them first
# (deploy/nginx.conf, client_max_body_size).
DRAIN_MAX_BYTES = 1024 * 1024
_READ = 64 * 1024


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
            if _chunked(request):
                return self._chunked(request) or self.get_response(request)
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                return json_error(400, "bad request")
            if length > settings.API_MAX_BODY_BYTES:
                _drain(request, DRAIN_MAX_BYTES)
                return json_error(413, "request too large")
        return self.get_response(request)

    def _chunked(self, request: HttpRequest) -> HttpResponse | None:
        """A `Transfer-Encoding: chunked` body (no Content-Length; the server has decoded the chunks): read
        it here, bounded like any other, and hand it on as if its length had been sent. Without this,
        Django reads a body without Content-Length as empty. A server that cannot say where such a body
        ends (`wsgi.input_terminated`, which gunicorn sets) gets 411."""
        if not request.META.get("wsgi.input_terminated"):
            return json_error(411, "length required")
        limit = settings.API_MAX_BODY_BYTES
        stream = request.META["wsgi.input"]
        body = _read(stream, limit + 1)
        if len(body) > limit:
            _drain(request, DRAIN_MAX_BYTES)
            return json_error(413, "request too large")
        request.META["CONTENT_LENGTH"] = str(len(body))
        request._stream = LimitedStream(io.BytesIO(body), len(body))
        return None


def _chunked(request: HttpRequest) -> bool:
    return "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower() and not request.META.get(
        "CONTENT_LENGTH"
    )


def _read(stream, limit: int) -> bytes:
    parts, size = [], 0
    while size < limit:
        part = stream.read(min(_READ, limit - size))
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts)


def _drain(request: HttpRequest, limit: int) -> None:
    """Read and drop what is left of the body, up to `limit`, where the server ends the input at the body's
    end (`wsgi.input_terminated`: gunicorn); elsewhere a read past what arrived could wait for ever."""
    if not request.META.get("wsgi.input_terminated"):
        return
    stream = request.META["wsgi.input"]
    try:
        while limit > 0:
            part = stream.read(min(_READ, limit))
            if not part:
                return
            limit -= len(part)
    except OSError:  # the client went away: nothing left to keep in step with
        return


def _nul_in_headers(request: HttpRequest) -> bool:
    # gunicorn refuses NUL in header values; other servers (and in-process clients) pass it on.
    return any(
        "\x00" in value for key, value in request.META.items() if key.startswith("HTTP_") and isinstance(value, str)
    )


class ProbeMiddleware:
    """/healthz, /readyz and /metrics, answered before the host check (ALLOWED_HOSTS) and the https redirect
    (SECURE_SSL_REDIRECT): a load balancer or an orchestrator probes a node by its address (`Host:
    10.0.0.5`) over plain http, and must learn whether the node works, not get a 400 or a 301."""

    PROBES = {"/healthz": healthz, "/readyz": readyz, "/metrics": metrics}

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        probe = self.PROBES.get(request.path_info)
        return probe(request) if probe is not None else self.get_response(request)


# The API and the redirect authenticate by token or need no one at all: sessions, users and messages
# are for the pages (the back office, the links of our emails). Skipping them there saves what
# docs/benchmarks.md, "Middleware for the pages only", measures, in one settings module.
BARE_PATHS = ("/api/", "/l/")


def _for_pages_only(middleware: type) -> type:
    """`middleware`, passed through on BARE_PATHS. A subclass, so Django's admin checks still find it."""

    class ForPagesOnly(middleware):
        def __call__(self, request: HttpRequest) -> HttpResponse:
            if request.path_info.startswith(BARE_PATHS):
                return self.get_response(request)
            return super().__call__(request)

    ForPagesOnly.__name__ = ForPagesOnly.__qualname__ = middleware.__name__
    return ForPagesOnly


SessionMiddleware = _for_pages_only(sessions.SessionMiddleware)
AuthenticationMiddleware = _for_pages_only(auth.AuthenticationMiddleware)
MessageMiddleware = _for_pages_only(messages.MessageMiddleware)
