"""GET /lf.js: the pixel's script, from memory, gzipped for browsers that take it, revalidated by ETag.

Not WhiteNoise (which serves the admin's files): it compares If-None-Match as one exact string, so
a tag a proxy weakened (`W/"..."`, as nginx does when it gzips) or a list of tags never gets a 304,
and it sends gzip to `gzip;q=0`; and it compresses only files collectstatic wrote beside the original,
while this script ships inside the app. tests/conversions/test_pixel_script.py holds these cases.
"""

import gzip
import hashlib
from functools import cache
from pathlib import Path

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseNotModified
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_safe

SCRIPT_PATH = Path(__file__).resolve().parent / "pixel" / "lf.js"
# Customers paste an unversioned URL into their pages: a day in caches, refreshed in the background for
# a week after, and a 304 by ETag when it has not changed. A fix reaches every visitor within a day.
CACHE_CONTROL = "public, max-age=86400, stale-while-revalidate=604800"


@cache
def _script() -> tuple[bytes, bytes, str]:
    raw = SCRIPT_PATH.read_bytes()
    return raw, gzip.compress(raw, compresslevel=9, mtime=0), f'"{hashlib.sha256(raw).hexdigest()[:32]}"'


@require_safe
def pixel_script(request: HttpRequest) -> HttpResponse:
    if settings.DEBUG:
        _script.cache_clear()  # `make run`: edits to lf.js show on reload
    raw, gzipped, etag = _script()
    wants_gzip = _accepts_gzip(request.META.get("HTTP_ACCEPT_ENCODING", ""))
    # Weak comparison (RFC 9110 13.1.2): proxies may mark our strong tag weak when they recompress.
    if etag in (tag.strip().removeprefix("W/") for tag in request.META.get("HTTP_IF_NONE_MATCH", "").split(",")):
        response = HttpResponseNotModified()
    else:
        response = HttpResponse(gzipped if wants_gzip else raw, content_type="text/javascript; charset=utf-8")
        if wants_gzip:
            response["Content-Encoding"] = "gzip"
    response["ETag"] = etag
    response["Cache-Control"] = CACHE_CONTROL
    # Loaded by any site: let pages with Cross-Origin-Embedder-Policy embed it too.
    response["Cross-Origin-Resource-Policy"] = "cross-origin"
    response["Access-Control-Allow-Origin"] = "*"
    patch_vary_headers(response, ("Accept-Encoding",))
    return response


def _accepts_gzip(header: str) -> bool:
    for part in header.split(","):
        coding, _, params = part.partition(";")
        if coding.strip().lower() in ("gzip", "*"):
            quality = params.strip().lower().removeprefix("q=")
            try:
                return not params.strip() or float(quality) > 0
            except ValueError:
                return False
    return False
