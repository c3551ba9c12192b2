"""GET /l/<key> answered before Django's handler (lftrack/wsgi.py): the redirect's own WSGI path.

Django's handler (the request and response objects, the request signals, the middleware chain) cost the
redirect a third of its CPU under gunicorn (docs/benchmarks.md, "The redirect before Django's handler").
This path answers a plain GET of a link itself: the same visit (clicks/views.py's visit_location), the same
deadline, request id, metrics and headers as through Django. Anything else (HEAD, other methods, a host
Django would refuse, an https redirect due, a NUL) goes to Django, where clicks/middleware.py answers it;
an error on this path (404, 503, 400) is answered by Django's own handlers and response middleware.
"""

import time
from urllib.parse import parse_qsl

from django.conf import settings
from django.core.handlers.exception import response_for_exception
from django.core.handlers.wsgi import WSGIRequest
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.security import SecurityMiddleware

from clicks.middleware import LINK_PATH
from clicks.recipients import RECIPIENT_PARAM
from clicks.views import visit_location
from lftrack.deadline import watchdog
from lftrack.logs import request_id_of, request_id_var
from lftrack.metrics import REQUESTS, labelled
from lftrack.ratelimit import address_key, address_of

_ROUTE = "follow-link"  # lftrack/metrics.py's route of the redirect


def redirect_first(django_application):
    """`django_application`, with GET /l/<key> answered before it."""

    def application(environ, start_response):
        if environ.get("REQUEST_METHOD") != "GET" or LINK_PATH.fullmatch(environ.get("PATH_INFO", "")) is None:
            return django_application(environ, start_response)
        secure = _secure(environ)
        if not _straight_to_the_redirect(environ, secure):
            return django_application(environ, start_response)
        started = time.perf_counter()
        request_id = request_id_of(environ)
        token = request_id_var.set(request_id)
        # As Django's request signals do: a connection past CONN_MAX_AGE or broken by the previous request goes.
        close_old_connections()
        deadline = settings.REDIRECT_DEADLINE
        if deadline:
            watchdog.watch(time.monotonic() + deadline)
        try:
            status, headers = _redirect(_location(environ), secure)
        except Exception as exc:
            request = WSGIRequest(environ)
            response = response_for_exception(request, exc)  # the view's errors, as Django answers them
            for middleware in (CommonMiddleware, XFrameOptionsMiddleware, SecurityMiddleware):
                # What Django's response middleware does to the answer, settings read now as Django's would be.
                response = middleware(_unused).process_response(request, response)
            status, headers = f"{response.status_code} {response.reason_phrase}", list(response.items())
            body = [response.content]
        else:
            body = []
        finally:
            if deadline:
                watchdog.forget()
            close_old_connections()
            request_id_var.reset(token)
        headers.append(("X-Request-ID", request_id))
        start_response(status, headers)
        labelled(REQUESTS, _ROUTE, status[:3]).observe(time.perf_counter() - started)
        return body

    return application


def _unused(request):
    raise AssertionError("only the middleware's process_response is called")


def _straight_to_the_redirect(environ, secure: bool) -> bool:
    """Whether Django would hand this GET of a link straight to the redirect: no https redirect due, a host it
    accepts, nothing for the request guard or CommonMiddleware to answer."""
    if "%00" in environ.get("QUERY_STRING", ""):
        return False  # lftrack/middleware.py's RequestGuardMiddleware answers it
    if settings.SECURE_SSL_REDIRECT and not secure:
        return False
    if settings.USE_X_FORWARDED_HOST or settings.PREPEND_WWW or settings.DISALLOWED_USER_AGENTS:
        return False  # what CommonMiddleware and the host check would do differently: left to them
    host = environ.get("HTTP_HOST")
    if not host:  # as request.get_host() falls back
        host, port = environ.get("SERVER_NAME", ""), environ.get("SERVER_PORT", "")
        if port != ("443" if secure else "80"):
            host = f"{host}:{port}"
    domain, _ = split_domain_port(host)
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    return bool(domain) and validate_host(domain, allowed)


def _secure(environ) -> bool:
    """request.is_secure(), from the environ."""
    if settings.SECURE_PROXY_SSL_HEADER:
        header, secure_value = settings.SECURE_PROXY_SSL_HEADER
        value = environ.get(header)
        if value is not None:
            return value.split(",", 1)[0].strip() == secure_value
    return environ.get("wsgi.url_scheme") == "https"


def _location(environ) -> str:
    query = environ.get("QUERY_STRING", "")
    token = dict(parse_qsl(query)).get(RECIPIENT_PARAM) if RECIPIENT_PARAM in query else None
    return visit_location(
        key=environ["PATH_INFO"][3:],
        meta=environ,
        client=address_key(address_of(environ)),
        token=token,
    )


def _redirect(location: str, secure: bool) -> tuple[str, list[tuple[str, str]]]:
    """The view's 302 (clicks/views.py, _redirect) with what the response middleware adds to it."""
    headers = [
        ("Content-Type", f"text/html; charset={settings.DEFAULT_CHARSET}"),  # HttpResponse's default
        ("Location", location),
        ("Cache-Control", "no-store"),
        ("Referrer-Policy", "no-referrer-when-downgrade"),
        ("Content-Length", "0"),
        ("X-Frame-Options", settings.X_FRAME_OPTIONS.upper()),
    ]
    if settings.SECURE_HSTS_SECONDS and secure:
        hsts = f"max-age={settings.SECURE_HSTS_SECONDS}"
        if settings.SECURE_HSTS_INCLUDE_SUBDOMAINS:
            hsts += "; includeSubDomains"
        if settings.SECURE_HSTS_PRELOAD:
            hsts += "; preload"
        headers.append(("Strict-Transport-Security", hsts))
    if settings.SECURE_CONTENT_TYPE_NOSNIFF:
        headers.append(("X-Content-Type-Options", "nosniff"))
    if settings.SECURE_CROSS_ORIGIN_OPENER_POLICY:
        headers.append(("Cross-Origin-Opener-Policy", settings.SECURE_CROSS_ORIGIN_OPENER_POLICY))
    return "302 Found", headers
