"""What this machine serves before POST /api/v1/conversions does its own work: the floors of bench/floor.sh.

`gunicorn bench.floor:application` with BENCH_FLOOR set to one level; each answers POST
/api/v1/conversions with 201 and a conversion-sized JSON body, doing a little more than the one before:

  raw     a bare WSGI callable: gunicorn and wrk alone
  django  Django with lftrack's settings and every middleware, a plain view (URL resolution, middleware);
          GET /l/<key> answers a 302 without looking anything up (bench/redirect.sh's floor)
  drf     a DRF ViewSet with lftrack's bearer authentication (the token lookup on PostgreSQL), both rate
          limits on Redis and the request body validated by the endpoint's own serializer: everything but
          the conversion's transaction
  full    lftrack itself (lftrack.wsgi): the customer match and the event insert in one transaction
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lftrack.settings")
LEVEL = os.environ.get("BENCH_FLOOR", "full")
BODY = (
    b'{"id": 1, "event": "sale", "click_id": "3q2-7wEvRm0gq8TzLh1YXw", "link_id": 7,'
    b' "customer": {"id": 12, "external_id": "user_42"}, "occurred_at": "2026-11-21T22:53:54.057780Z"}'
)

if LEVEL == "raw":

    def application(environ, start_response):
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        start_response("201 Created", [("Content-Type", "application/json"), ("Content-Length", str(len(BODY)))])
        return [BODY]

elif LEVEL in ("django", "drf"):
    import json

    import django

    django.setup()
    from django.conf import settings
    from django.http import HttpResponse
    from django.urls import path
    from django.views.decorators.csrf import csrf_exempt
    from rest_framework import viewsets
    from rest_framework.response import Response

    from conversions.api import CONVERSION_LIMITS, ConversionInput
    from lftrack.parsers import parse, request_json
    from lftrack.ratelimit import rate_limit
    from lftrack.views import healthz

    @csrf_exempt
    def plain(request):
        return HttpResponse(BODY, status=201, content_type="application/json")

    class FloorViewSet(viewsets.ViewSet):
        @rate_limit(*CONVERSION_LIMITS)
        def create(self, request):
            parse(ConversionInput, request_json(request))
            return Response(json.loads(BODY), status=201)

    def redirect(request, key):  # bench/redirect.sh's floor: a 302 like the redirect's, nothing looked up
        response = HttpResponse(status=302)
        response["Location"] = f"https://shop.example.com/pricing?lf_cid={key}"
        response["Cache-Control"] = "no-store"
        return response

    view = plain if LEVEL == "django" else FloorViewSet.as_view({"post": "create"})
    urlpatterns = [path("api/v1/conversions", view), path("l/<slug:key>", redirect), path("healthz", healthz)]
    settings.ROOT_URLCONF = __name__  # before the first request builds the resolver
    # Every middleware but the redirect's own (which would answer /l/<key> itself).
    settings.MIDDLEWARE = [name for name in settings.MIDDLEWARE if name != "clicks.middleware.RedirectMiddleware"]

    from django.core.wsgi import get_wsgi_application

    application = get_wsgi_application()
else:
    from lftrack.wsgi import application  # noqa: F401
