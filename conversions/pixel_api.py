"""The pixel's POST /api/v1/browser/conversions: leads only, on the workspace's public tracking key, held to the
workspace's allowed origins by CORS (docs/api.md; described in conversions/pixel_openapi.py; the script is views.py)."""

from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.exceptions import MethodNotAllowed
from rest_framework.response import Response

from conversions import pixel_openapi
from conversions.models import ConversionEvent
from conversions.pixel_openapi import PREFLIGHT_HEADERS
from conversions.services import pixel_lead_record
from lftrack.errors import Forbidden, ServiceError
from lftrack.fields import StrictCharField, StrictChoiceField, StrictEmailField, iso_utc
from lftrack.metrics import CONVERSIONS, labelled
from lftrack.parsers import JSONObjectParser, PlainTextJSONParser, parse, request_json
from lftrack.ratelimit import Limit, ip_key, limits_enforce
from workspaces.auth import HasTrackingKey, TrackingKeyAuthentication
from workspaces.origins import origin_allowed_anywhere, workspace_origin_allowed


class BrowserCustomerInput(serializers.Serializer):
    # The key is public: a person is named by email only, never by an external_id (docs/matching.md).
    email = StrictEmailField(allow_blank=False)
    name = StrictCharField(max_length=200, required=False, allow_null=True)


class BrowserConversionInput(serializers.Serializer):
    event = StrictChoiceField(
        choices=["lead"],
        error_messages={"invalid": "invalid event", "required": "invalid event", "null": "invalid event"},
    )
    click_id = StrictCharField(
        max_length=64,
        allow_blank=False,
        error_messages={
            "required": "click_id is required",
            "blank": "click_id is required",
            "null": "click_id is required",
        },
    )
    customer = BrowserCustomerInput(
        required=False, allow_null=True, error_messages={"invalid": "customer must be an object"}
    )


class BrowserConversionRequest(BrowserConversionInput):
    """The body as the pixel sends it: the input plus the tracking key, which TrackingKeyAuthentication reads."""

    key = serializers.CharField(
        required=False,
        max_length=64,
        help_text="The workspace's public tracking key, when no X-Tracking-Key header is sent.",
    )


def browser_conversion_out(conversion: ConversionEvent, click_id: str) -> dict:
    """No customer data: anyone holding the public key would read it back."""
    return {
        "id": conversion.pk,
        "event": conversion.event,
        "click_id": click_id,
        "link_id": conversion.link_id,
        "occurred_at": iso_utc(conversion.occurred_at),
    }


def workspace_key(group: str, request) -> str:
    return str(request.auth.pk)


BROWSER_IP = Limit("browser-ip", ip_key, "RATELIMIT_BROWSER_IP")
BROWSER_KEY = Limit("browser-key", workspace_key, "RATELIMIT_BROWSER_KEY")


class BrowserConversionViewSet(viewsets.ViewSet):
    """The pixel's endpoint: the public tracking key instead of a bearer token, leads only, CORS.

    A browser that sends `Origin` must be on one of the workspace's allowed origins (403 otherwise);
    requests without `Origin` do not come from a page and are taken on the key alone.
    """

    authentication_classes = [TrackingKeyAuthentication]
    permission_classes = [HasTrackingKey]
    # OPTIONS is described by hand: drf-spectacular never inspects it (lftrack.openapi.postprocess adds this).
    openapi_extra_operations = {"options": pixel_openapi.BROWSER_CONVERSION_PREFLIGHT}
    parser_classes = [JSONObjectParser, PlainTextJSONParser]
    workspace = None
    usage = None

    def initial(self, request, *args, **kwargs) -> None:
        # Before authentication: every request from an address counts, a wrong key or a preflight too.
        self.usage = limits_enforce(request, (BROWSER_IP,))
        if request.method not in ("POST", "OPTIONS"):  # 405 before asking for a key a GET cannot carry
            raise MethodNotAllowed(request.method)
        super().initial(request, *args, **kwargs)
        if request.method == "OPTIONS":
            return
        self.workspace = request.auth
        origin = request.META.get("HTTP_ORIGIN")
        if origin is not None and not workspace_origin_allowed(self.workspace, origin):
            raise Forbidden("origin not allowed")
        per_key = limits_enforce(request, (BROWSER_KEY,))
        if per_key is not None and (self.usage is None or per_key[1] < self.usage[1]):
            self.usage = per_key

    @extend_schema(
        request={"application/json": BrowserConversionRequest, "text/plain": BrowserConversionRequest},
        **pixel_openapi.BROWSER_CONVERSION_CREATE,
    )
    def create(self, request) -> Response:
        data = parse(BrowserConversionInput, request_json(request))
        customer = data.get("customer")
        try:
            conversion, stored = pixel_lead_record(
                workspace=self.workspace,
                click_id=data["click_id"],
                customer=None if customer is None else {"email": customer["email"], "name": customer.get("name") or ""},
            )
        except ServiceError:
            labelled(CONVERSIONS, "pixel", "lead", "refused").inc()
            raise
        labelled(CONVERSIONS, "pixel", "lead", "recorded" if stored else "replayed").inc()
        return Response(browser_conversion_out(conversion, data["click_id"]), status=201 if stored else 200)

    def options(self, request, *args, **kwargs) -> HttpResponse:
        """CORS preflight. It names no key, so it is granted to an origin that some workspace allows;
        the POST itself is then held to its own workspace's origins."""
        response = HttpResponse(status=204)
        del response["Content-Type"]
        response["Allow"] = "POST, OPTIONS"
        origin = request.META.get("HTTP_ORIGIN")
        if origin and origin_allowed_anywhere(origin):
            response["Access-Control-Allow-Origin"] = origin
            for name, value in PREFLIGHT_HEADERS.items():
                response[name] = value
        return response

    # CORS by hand, not django-cors-headers: its middleware decides before the view from the request
    # alone, so it could only allow an origin that some workspace allows, and the answer to a POST must
    # be held to the origins of the workspace whose key the body names (the preflight, which names no
    # key, is the one place where "some workspace" is the rule: `options` above).
    def finalize_response(self, request: HttpRequest, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        patch_vary_headers(response, ("Origin",))
        origin = request.META.get("HTTP_ORIGIN")
        if origin and self.workspace is not None and workspace_origin_allowed(self.workspace, origin):
            response["Access-Control-Allow-Origin"] = origin
        if self.usage is not None:  # a 429 already carries the figures of the limit it hit
            response.setdefault("X-RateLimit-Limit", str(self.usage[0]))
            response.setdefault("X-RateLimit-Remaining", str(self.usage[1]))
        return response
