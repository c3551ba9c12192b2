"""POST /api/v1/conversions (SPEC 4.1) and the pixel's POST /api/v1/browser/conversions (CONTRACT 7)."""
from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers
from rest_framework import serializers, viewsets
from rest_framework.exceptions import MethodNotAllowed
from rest_framework.response import Response

from conversions.models import ConversionEvent
from conversions.services import (
    Answer,
    conversion_record,
    idempotency_key_check,
    idempotent_answer,
    request_digest,
)
from customers.models import Customer
from lftrack.api import (
    JSONObjectField,
    JSONObjectParser,
    PlainTextJSONParser,
    StrictCharField,
    StrictChoiceField,
    StrictEmailField,
    StrictIntegerField,
    StrictURLField,
    iso_utc,
    optional,
    parse,
    request_json,
)
from lftrack.auth import HasTrackingKey, TrackingKeyAuthentication
from lftrack.errors import Forbidden
from lftrack.ratelimit import Limit, ip_key, limits_enforce, rate_limit, token_key
from workspaces.services import origin_allowed_anywhere, workspace_origin_allowed

VALUE_CENTS_ERROR = "value_cents must be a non-negative integer"


class CustomerInput(serializers.Serializer):
    external_id = StrictCharField(max_length=255, required=False, allow_null=True)
    email = StrictEmailField(required=False, allow_null=True)
    name = StrictCharField(max_length=200, required=False, allow_null=True)
    avatar_url = StrictURLField(max_length=2048, required=False, allow_null=True)

    def validate(self, attrs: dict) -> dict:
        present = {field: value for field, value in attrs.items() if value}
        if not present.get("email") and not present.get("external_id"):
            raise serializers.ValidationError("customer needs email or external_id")
        return present


class ConversionInput(serializers.Serializer):
    event = StrictChoiceField(choices=["lead", "sale"], error_messages={"invalid": "invalid event", "required": "invalid event", "null": "invalid event"})
    click_id = StrictCharField(max_length=64, allow_blank=False, error_messages={"required": "click_id is required", "blank": "click_id is required", "null": "click_id is required"})
    # Validated only for sales: on a lead it is ignored, whatever it holds (CONTRACT.md section 3).
    value_cents = serializers.JSONField(required=False, allow_null=True)
    event_name = StrictCharField(max_length=255, required=False, allow_null=True)
    customer = CustomerInput(required=False, allow_null=True, error_messages={"invalid": "customer must be an object"})
    meta = JSONObjectField(max_bytes=16 * 1024, required=False, allow_null=True)

    def validate(self, attrs: dict) -> dict:
        value = attrs.get("value_cents")
        if attrs["event"] == ConversionEvent.Event.SALE and value is not None:
            attrs["value_cents"] = _strict_value_cents.run_validation(value)
        else:
            attrs["value_cents"] = None
        return attrs


_strict_value_cents = StrictIntegerField(error_messages={"invalid": VALUE_CENTS_ERROR})
_strict_value_cents.bind("value_cents", None)


def conversion_out(conversion: ConversionEvent, click_id: str) -> dict:
    customer = conversion.customer
    return {
        "id": conversion.pk,
        "event": conversion.event,
        "click_id": click_id,
        "link_id": conversion.link_id,
        "customer": None if customer is None else {"id": customer.pk, "external_id": optional(customer.external_id)},
        "occurred_at": iso_utc(conversion.occurred_at),
    }


class ConversionViewSet(viewsets.ViewSet):
    @rate_limit(
        Limit("conversions-token", token_key, "RATELIMIT_CONVERSIONS_TOKEN"),
        Limit("conversions-ip", ip_key, "RATELIMIT_CONVERSIONS_IP"),
    )
    def create(self, request) -> Response:
        data = parse(ConversionInput, request_json(request))
        # META, not request.headers: that would build a dict of every header first.
        key = idempotency_key_check(request.META.get("HTTP_IDEMPOTENCY_KEY"))
        workspace = request.auth.workspace

        def record() -> Answer:
            conversion = conversion_record(
                workspace=workspace,
                channel="api",
                event=data["event"],
                click_id=data["click_id"],
                value_cents=data["value_cents"],
                event_name=data.get("event_name") or "",
                meta=data.get("meta"),
                customer=data.get("customer"),
            )
            return Answer(status=201, body=conversion_out(conversion, data["click_id"]))

        answer = idempotent_answer(
            workspace=workspace, key=key, digest=request_digest(request.data) if key else "", answer=record
        )
        headers = {"Idempotent-Replayed": "true"} if answer.replayed else None
        return Response(answer.body, status=answer.status, headers=headers)


class BrowserCustomerInput(serializers.Serializer):
    # The key is public: a person is named by email only, never by an external_id (CONTRACT.md section 7).
    email = StrictEmailField(allow_blank=False)
    name = StrictCharField(max_length=200, required=False, allow_null=True)


class BrowserConversionInput(serializers.Serializer):
    event = StrictChoiceField(choices=["lead"], error_messages={"invalid": "invalid event", "required": "invalid event", "null": "invalid event"})
    click_id = StrictCharField(max_length=64, allow_blank=False, error_messages={"required": "click_id is required", "blank": "click_id is required", "null": "click_id is required"})
    customer = BrowserCustomerInput(required=False, allow_null=True, error_messages={"invalid": "customer must be an object"})


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
PREFLIGHT_HEADERS = {
    "Access-Control-Allow-Methods": "POST, OPTIONS",
    "Access-Control-Allow-Headers": "Content-Type, X-Tracking-Key",
    "Access-Control-Max-Age": "7200",  # Chromium's ceiling
}


class BrowserConversionViewSet(viewsets.ViewSet):
    """The pixel's endpoint: the public tracking key instead of a bearer token, leads only, CORS.

    A browser that sends `Origin` must be on one of the workspace's allowed origins (403 otherwise);
    requests without `Origin` do not come from a page and are taken on the key alone.
    """

    authentication_classes = [TrackingKeyAuthentication]
    permission_classes = [HasTrackingKey]
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

    def create(self, request) -> Response:
        data = parse(BrowserConversionInput, request_json(request))
        customer = data.get("customer")
        conversion = conversion_record(
            workspace=self.workspace,
            channel=Customer.Channel.PIXEL,
            event=ConversionEvent.Event.LEAD,
            click_id=data["click_id"],
            customer=None if customer is None else {"email": customer["email"], "name": customer.get("name") or ""},
        )
        return Response(browser_conversion_out(conversion, data["click_id"]), status=201)

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
