"""GET /l/<key>, the redirect, answered before the middleware and the URL resolving that serve the pages."""

import re

from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpRequest, HttpResponse
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware

from clicks.views import follow_link

LINK_PATH = re.compile(r"/l/[-a-zA-Z0-9_]+")  # lftrack/urls.py's "l/<slug:key>"


class RedirectMiddleware:
    """Answers the redirect right after the security headers (settings.MIDDLEWARE). The middleware after it
    (static files, sessions, CSRF, users, messages, login lockouts) and URL resolving serve the pages and
    the API, and cost each click 132,557 instructions, 11.5% of its Python (docs/benchmarks.md, "The
    redirect answered before the pages' middleware"). The answers stay what they were: what CommonMiddleware and XFrameOptionsMiddleware do to a
    request and its answer (the Host check, Content-Length, X-Frame-Options) is done here by them."""

    def __init__(self, get_response):
        self.get_response = get_response
        self._common = CommonMiddleware(get_response)
        self._frames = XFrameOptionsMiddleware(get_response)
        # Errors (404, 405, 503) answered as Django's handler answers them (lftrack/errors.py).
        self._follow = convert_exception_to_response(self._follow_link)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if LINK_PATH.fullmatch(request.path_info) is None:
            return self.get_response(request)
        response = self._common.process_response(request, self._follow(request))
        return self._frames.process_response(request, response)

    def _follow_link(self, request: HttpRequest) -> HttpResponse:
        return self._common.process_request(request) or follow_link(request, request.path_info[3:])
