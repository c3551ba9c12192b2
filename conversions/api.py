"""POST and GET /api/v1/conversions, and the pixel's POST /api/v1/browser/conversions (docs/api.md)."""

from datetime import datetime, timedelta

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_serializer,
)
from rest_framework import serializers, viewsets
from rest_framework.exceptions import MethodNotAllowed
from rest_framework.response import Response

from conversions.models import ConversionEvent
from conversions.selectors import conversions_page
from conversions.services import (
    IDEMPOTENCY_KEY_MAX,
    IDEMPOTENCY_TTL,
    Answer,
    InvoiceRecorded,
    conversion_record,
    idempotency_key_check,
    idempotent_answer,
    pixel_lead_record,
    request_digest,
)
from lftrack.currencies import MONEY_MAX, currency_code
from lftrack.errors import Forbidden, Unprocessable
from lftrack.fields import (
    JSONObjectField,
    StrictCharField,
    StrictChoiceField,
    StrictEmailField,
    StrictIntegerField,
    StrictURLField,
    aware_utc,
    iso_utc,
    optional,
)
from lftrack.openapi import (
    PAGE_PARAMETERS,
    PagedAutoSchema,
    error_response_object,
    error_responses,
    page_of,
    string_messages,
)
from lftrack.pagination import PAGE_ERRORS, page_out, page_position, query_int, query_time
from lftrack.parsers import JSONObjectParser, PlainTextJSONParser, parse, request_json
from lftrack.ratelimit import READ_LIMITS, Limit, ip_key, limits_enforce, rate_limit, token_key
from workspaces.auth import HasTrackingKey, TrackingKeyAuthentication
from workspaces.services import origin_allowed_anywhere, workspace_origin_allowed

VALUE_CENTS_ERROR = "value_cents must be a non-negative integer"
VALUE_CENTS_TOO_LARGE = f"value_cents must be at most {MONEY_MAX}"
CURRENCY_ERROR = "currency must be an ISO 4217 code"
CURRENCY_NOT_A_STRING = "currency must be a string"


@extend_schema_field(
    {
        "type": "integer",
        "format": "int64",
        "minimum": 0,
        "maximum": MONEY_MAX,
        "description": f"A sale's value in the smallest currency unit (49000 is 490.00), at most {MONEY_MAX} (2^53 - 1). "
        "Ignored on a lead, whatever it holds.",
    }
)
class ValueCentsField(serializers.JSONField):
    """Taken as sent: `ConversionInput.validate` checks it on a sale only (docs/api.md)."""


@extend_schema_field(
    {
        "type": "string",
        "maxLength": 3,
        "description": "A sale's currency, an ISO 4217 code in any letter case (`eur`); `value_cents` is in its minor "
        "unit (cents; yen for JPY, which has none; fils for KWD, a thousandth). Absent: the workspace's currency (USD "
        "unless changed in its settings). Ignored on a lead, whatever it holds.",
    }
)
class CurrencyField(serializers.JSONField):
    """Taken as sent: `ConversionInput.validate` checks it on a sale only (docs/api.md)."""


class CustomerInput(serializers.Serializer):
    """The customer the event belongs to: a non-empty `email` or `external_id` (or both) is required."""

    external_id = StrictCharField(max_length=255, required=False, allow_null=True)
    email = StrictEmailField(required=False, allow_null=True)
    name = StrictCharField(max_length=200, required=False, allow_null=True)
    avatar_url = StrictURLField(max_length=2048, required=False, allow_null=True)

    def validate(self, attrs: dict) -> dict:
        present = {field: value for field, value in attrs.items() if value}
        if not present.get("email") and not present.get("external_id"):
            raise serializers.ValidationError("customer needs email or external_id")
        return present


# A sender's clock may run a little ahead of ours.
CLOCK_SKEW = timedelta(minutes=5)


def backdated(raw: str) -> datetime:
    """`occurred_at` as sent: an aware time (in UTC) within BACKDATE_WINDOW_DAYS, not in the future."""
    moment = aware_utc(raw)
    if moment is None:
        raise serializers.ValidationError("occurred_at must be an ISO 8601 time with an offset")
    now = timezone.now()
    if moment > now + CLOCK_SKEW:
        raise serializers.ValidationError("occurred_at is in the future")
    if moment < now - timedelta(days=settings.BACKDATE_WINDOW_DAYS):
        raise serializers.ValidationError(f"occurred_at is more than {settings.BACKDATE_WINDOW_DAYS} days ago")
    return moment


class ConversionInput(serializers.Serializer):
    event = StrictChoiceField(
        choices=["lead", "sale"],
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
    # Validated only for sales: on a lead it is ignored, whatever it holds (docs/api.md).
    value_cents = ValueCentsField(required=False, allow_null=True)
    event_name = StrictCharField(max_length=255, required=False, allow_null=True)
    customer = CustomerInput(required=False, allow_null=True, error_messages={"invalid": "customer must be an object"})
    meta = JSONObjectField(max_bytes=16 * 1024, required=False, allow_null=True)
    occurred_at = StrictCharField(
        max_length=64,
        required=False,
        allow_null=True,
        help_text="When it happened, for a backfill: ISO 8601 with an offset, at most BACKDATE_WINDOW_DAYS (90) ago and "
        "not in the future; the click must have existed by then. Absent: now.",
    )
    invoice_id = StrictCharField(
        max_length=255,
        required=False,
        allow_null=True,
        help_text="A sale's charge or invoice id at your payment provider: a second sale with it stores nothing and "
        "answers 200 with the first (`Idempotent-Replayed: true`), forever. Ignored on a lead.",
    )
    # Like value_cents: validated only for sales, ignored on a lead whatever it holds (docs/api.md).
    currency = CurrencyField(required=False, allow_null=True)

    def validate(self, attrs: dict) -> dict:
        if attrs.get("occurred_at"):
            attrs["occurred_at"] = backdated(attrs["occurred_at"])
        value = attrs.get("value_cents")
        if attrs["event"] == ConversionEvent.Event.SALE and value is not None:
            attrs["value_cents"] = _strict_value_cents.run_validation(value)
        else:
            attrs["value_cents"] = None
        currency = attrs.get("currency")
        if attrs["event"] == ConversionEvent.Event.SALE and currency is not None:
            if not isinstance(currency, str):
                raise serializers.ValidationError(CURRENCY_NOT_A_STRING)
            attrs["currency"] = currency_code(currency)
            if attrs["currency"] is None:
                raise serializers.ValidationError(CURRENCY_ERROR)
        else:
            attrs["currency"] = None
        return attrs


_strict_value_cents = StrictIntegerField(
    max_value=MONEY_MAX, error_messages={"invalid": VALUE_CENTS_ERROR, "too_large": VALUE_CENTS_TOO_LARGE}
)
_strict_value_cents.bind("value_cents", None)


class ConversionCustomerOut(serializers.Serializer):
    id = serializers.IntegerField()
    external_id = serializers.CharField(allow_null=True)


@extend_schema_serializer(component_name="Conversion")
class ConversionOut(serializers.Serializer):
    """The stored event, as `conversion_out` builds it; `customer` is null when none was sent."""

    id = serializers.IntegerField()
    event = serializers.ChoiceField(choices=["lead", "sale"])
    click_id = serializers.CharField()
    link_id = serializers.IntegerField()
    customer = ConversionCustomerOut(allow_null=True)
    occurred_at = serializers.DateTimeField()


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


@extend_schema_serializer(component_name="ConversionRead")
class ConversionReadOut(ConversionOut):
    """A stored event as the read API shows it: the POST's answer and what else was sent."""

    value_cents = serializers.IntegerField(allow_null=True)
    event_name = serializers.CharField()
    meta = serializers.DictField()
    channel = serializers.ChoiceField(choices=["api", "pixel", "manual"])
    invoice_id = serializers.CharField(allow_null=True)
    currency = serializers.CharField(allow_null=True, help_text="A sale's ISO 4217 code; null on a lead.")
    refunded_cents = serializers.IntegerField(allow_null=True, help_text="What was refunded of a sale; null on a lead.")
    net_cents = serializers.IntegerField(allow_null=True, help_text="value_cents - refunded_cents; null on a lead.")


ConversionPageOut = page_of(ConversionReadOut, "ConversionPage")


def conversion_read_out(conversion: ConversionEvent) -> dict:
    return {
        **conversion_out(conversion, conversion.click_key),
        "value_cents": conversion.value_cents,
        "event_name": conversion.event_name,
        "meta": conversion.meta,
        "channel": conversion.channel,
        "invoice_id": optional(conversion.invoice_id),
        **sale_money_out(conversion),
    }


def sale_money_out(conversion: ConversionEvent) -> dict:
    """A sale's currency, refunded and net amounts (`refunded_cents` annotated or set by the caller); nulls on a lead."""
    if conversion.event != ConversionEvent.Event.SALE:
        return {"currency": None, "refunded_cents": None, "net_cents": None}
    return {
        "currency": conversion.currency,
        "refunded_cents": conversion.refunded_cents,
        "net_cents": (conversion.value_cents or 0) - conversion.refunded_cents,
    }


READ_ERRORS = [
    "invalid event",
    "link_id must be an integer",
    "customer_id must be an integer",
    "since must be an ISO 8601 time with an offset",
    "until must be an ISO 8601 time with an offset",
    *PAGE_ERRORS,
]


IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key",
    {"type": "string", "minLength": 1, "maxLength": IDEMPOTENCY_KEY_MAX, "pattern": "^[ -~]+$"},
    OpenApiParameter.HEADER,
    description="1 to 255 printable ASCII characters naming this request, e.g. a UUID. Within "
    f"{IDEMPOTENCY_TTL.total_seconds() / 3600:.0f} hours, a retry with the same key and the same body gets "
    "the first answer back (`Idempotent-Replayed: true`) and stores nothing; the same key with another body "
    "is 422. Only stored answers replay: after an error, correct the request and retry with the same key.",
)
IDEMPOTENCY_KEY_LONG = "Idempotency-Key is too long"
IDEMPOTENCY_KEY_INVALID = "Idempotency-Key must be 1 to 255 printable ASCII characters"
IDEMPOTENCY_KEY_REUSED = "idempotency key reused with a different body"
CONVERSION_ERRORS = [
    "invalid event",
    "click_id is required",
    "unknown click_id",
    VALUE_CENTS_ERROR,
    VALUE_CENTS_TOO_LARGE,
    "customer must be an object",
    "customer needs email or external_id",
    "invalid email",
    "avatar_url must be an http or https URL",
    "meta must be an object",
    "meta is too long",
    IDEMPOTENCY_KEY_LONG,
    IDEMPOTENCY_KEY_INVALID,
    IDEMPOTENCY_KEY_REUSED,
    "occurred_at must be an ISO 8601 time with an offset",
    "occurred_at is in the future",
    "occurred_at is more than 90 days ago",
    "occurred_at is before the click",
    CURRENCY_ERROR,
    *string_messages(
        "click_id", "event_name", "external_id", "email", "name", "avatar_url", "invoice_id", "occurred_at"
    ),
    CURRENCY_NOT_A_STRING,
]


CONVERSION_LIMITS = (
    Limit("conversions-token", token_key, "RATELIMIT_CONVERSIONS_TOKEN"),
    Limit("conversions-ip", ip_key, "RATELIMIT_CONVERSIONS_IP"),
)


class ConversionViewSet(viewsets.ViewSet):
    required_scopes = {"create": "conversions:write", "list": "read"}  # workspaces/auth.py
    schema = PagedAutoSchema()

    @extend_schema(
        operation_id="conversion_list",
        summary="List leads and sales, newest first",
        description="The workspace's events by `occurred_at`, newest first, a page at a time: pass the answer's "
        "`next` as `cursor` for the following page (an event recorded meanwhile never shifts later pages). "
        "Limits: 600 requests a minute per token and per client address.",
        tags=["conversions"],
        parameters=[
            OpenApiParameter("event", str, enum=["lead", "sale"], description="Only leads or only sales."),
            OpenApiParameter("link_id", int, description="Only the events of this link."),
            OpenApiParameter("customer_id", int, description="Only the events of this customer."),
            OpenApiParameter(
                "since", OpenApiTypes.DATETIME, description="Events at or after this time (with an offset)."
            ),
            OpenApiParameter("until", OpenApiTypes.DATETIME, description="Events before this time (with an offset)."),
            *PAGE_PARAMETERS,
        ],
        responses={
            200: OpenApiResponse(ConversionPageOut, description="A page of events."),
            **error_responses(400, 401, 403, 422, 429, 500, 503, e422=READ_ERRORS),
        },
    )
    @rate_limit(*READ_LIMITS)
    def list(self, request) -> Response:
        params = request.query_params
        event = params.get("event")
        if event is not None and event not in ("lead", "sale"):
            raise Unprocessable("invalid event")
        filters = {
            "event": event,
            "link_id": query_int(params, "link_id"),
            "customer_id": query_int(params, "customer_id"),
            "since": query_time(params, "since"),
            "until": query_time(params, "until"),
        }
        limit, after = page_position(params)
        page = conversions_page(
            workspace_id=request.auth.workspace_id,
            filters=filters,
            after=after,
            limit=limit + 1,
            test=request.auth.is_test,
        )
        return Response(page_out(page, limit, conversion_read_out, at=lambda c: c.occurred_at))

    @extend_schema(
        operation_id="conversion_create",
        summary="Record a lead or a sale against a click",
        description="Stores the event against the click's link (and so its post), matches or creates the customer "
        "(docs/matching.md) and enrolls them in the post's campaign, if any. Limits: 1,000 requests a minute per token "
        "and 600 per client address.",
        tags=["conversions"],
        request=ConversionInput,
        parameters=[IDEMPOTENCY_KEY],
        responses={
            201: OpenApiResponse(
                ConversionOut,
                description="Stored; or, with `Idempotent-Replayed: true`, the answer first given to this "
                "`Idempotency-Key`, nothing stored again.",
            ),
            200: OpenApiResponse(
                ConversionOut,
                description="A sale whose `invoice_id` the workspace already has: the first sale, with "
                "`Idempotent-Replayed: true`; nothing stored.",
            ),
            **error_responses(400, 401, 403, 413, 415, 422, 429, 500, 503, e422=CONVERSION_ERRORS),
        },
        examples=[
            OpenApiExample(
                "A sale with its customer",
                request_only=True,
                value={
                    "event": "sale",
                    "click_id": "3q2-7wEvRm0gq8TzLh1YXw",
                    "value_cents": 49000,
                    "event_name": "Annual plan",
                    "customer": {"email": "ada@example.com", "external_id": "user_42", "name": "Ada Lovelace"},
                    "meta": {"order_id": "A-1001"},
                },
            ),
            OpenApiExample("A lead", request_only=True, value={"event": "lead", "click_id": "3q2-7wEvRm0gq8TzLh1YXw"}),
            OpenApiExample(
                "Stored",
                response_only=True,
                status_codes=[201],
                value={
                    "id": 1,
                    "event": "sale",
                    "click_id": "3q2-7wEvRm0gq8TzLh1YXw",
                    "link_id": 7,
                    "customer": {"id": 12, "external_id": "user_42"},
                    "occurred_at": "2026-11-21T22:53:54.057780Z",
                },
            ),
        ],
    )
    @rate_limit(*CONVERSION_LIMITS)
    def create(self, request) -> Response:
        data = parse(ConversionInput, request_json(request))
        # META, not request.headers: that would build a dict of every header first.
        key = idempotency_key_check(request.META.get("HTTP_IDEMPOTENCY_KEY"))
        workspace = request.auth.workspace

        def record() -> Answer:
            try:
                conversion = conversion_record(
                    workspace=workspace,
                    channel="api",
                    event=data["event"],
                    click_id=data["click_id"],
                    value_cents=data["value_cents"],
                    event_name=data.get("event_name") or "",
                    meta=data.get("meta"),
                    customer=data.get("customer"),
                    invoice_id=data.get("invoice_id") or "",
                    occurred_at=data.get("occurred_at"),
                    currency=data["currency"],
                    test=request.auth.is_test,
                )
            except InvoiceRecorded as recorded:  # the invoice's first sale, whatever this body says
                return Answer(status=200, body=conversion_out(recorded.sale, recorded.sale.click_key), replayed=True)
            return Answer(status=201, body=conversion_out(conversion, data["click_id"]))

        answer = idempotent_answer(
            workspace=workspace,
            key=key,
            digest=request_digest(request.data) if key else "",
            answer=record,
            test=request.auth.is_test,
        )
        headers = {"Idempotent-Replayed": "true"} if answer.replayed else None
        return Response(answer.body, status=answer.status, headers=headers)


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


@extend_schema_serializer(component_name="BrowserConversion")
class BrowserConversionOut(serializers.Serializer):
    """The stored lead, without customer data: the key is public."""

    id = serializers.IntegerField()
    event = serializers.ChoiceField(choices=["lead"])
    click_id = serializers.CharField()
    link_id = serializers.IntegerField()
    occurred_at = serializers.DateTimeField()


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
BROWSER_ERRORS = [
    "invalid event",
    "click_id is required",
    "unknown click_id",
    "customer must be an object",
    "email is required",
    "invalid email",
    *string_messages("click_id", "email", "name"),
]
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
    # drf-spectacular never inspects OPTIONS; lftrack.openapi.postprocess adds this description of `options()`.
    openapi_extra_operations = {
        "options": {
            "operationId": "browser_conversion_preflight",
            "summary": "CORS preflight",
            "description": "What a browser sends before a cross-origin POST of JSON or with an X-Tracking-Key header. "
            "It names no key, so it is granted (the Access-Control-Allow-* headers) to an origin that some "
            "workspace allows, and answered without them otherwise; the POST is then held to its own workspace's "
            "origins. Counts toward the limit per client address.",
            "tags": ["pixel"],
            "security": [],
            "parameters": [
                {
                    "in": "header",
                    "name": "Origin",
                    "required": False,
                    "schema": {"type": "string"},
                    "description": "The page's origin, e.g. `https://shop.example`.",
                },
                {
                    "in": "header",
                    "name": "Access-Control-Request-Method",
                    "required": False,
                    "schema": {"type": "string"},
                },
                {
                    "in": "header",
                    "name": "Access-Control-Request-Headers",
                    "required": False,
                    "schema": {"type": "string"},
                },
            ],
            "responses": {
                "204": {
                    "description": "No content; the grant is in the headers.",
                    "headers": {
                        "Allow": {"schema": {"type": "string", "enum": ["POST, OPTIONS"]}},
                        **{
                            name: {"schema": {"type": "string", "enum": [value]}}
                            for name, value in PREFLIGHT_HEADERS.items()
                            if name != "Access-Control-Max-Age"
                        },
                        "Access-Control-Max-Age": {
                            "description": "Seconds a browser may keep the grant.",
                            "schema": {"type": "integer", "enum": [int(PREFLIGHT_HEADERS["Access-Control-Max-Age"])]},
                        },
                        "Access-Control-Allow-Origin": {"$ref": "#/components/headers/Access-Control-Allow-Origin"},
                        "Vary": {"$ref": "#/components/headers/Vary"},
                    },
                },
                "400": error_response_object(400, ["bad request"]),
                "413": error_response_object(413),
                "429": error_response_object(429),
                "500": error_response_object(500),
                "503": error_response_object(503),
            },
        }
    }
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
        operation_id="browser_conversion_create",
        summary="Record a lead from the pixel",
        description="Called by `lf.js`, not meant to be called directly. Leads only. A request carrying `Origin` "
        "must come from one of the workspace's allowed origins (403 otherwise), which then may read the answer "
        "(`Access-Control-Allow-Origin`). The body may be sent as `text/plain` holding JSON, as "
        "`navigator.sendBeacon` does. With a customer email it creates or matches a contact and fills blanks; it "
        "never moves an external_id nor overwrites anything. Limits: 600 requests a minute per client address "
        "(every request counts, preflights and wrong keys too) and 6,000 per tracking key.",
        tags=["pixel"],
        request={"application/json": BrowserConversionRequest, "text/plain": BrowserConversionRequest},
        responses={
            201: OpenApiResponse(BrowserConversionOut, description="Stored."),
            200: OpenApiResponse(
                BrowserConversionOut,
                description="The click has 3 pixel leads already: the latest of them, nothing stored.",
            ),
            **error_responses(
                400, 401, 403, 413, 415, 422, 429, 500, 503, e403=["origin not allowed"], e422=BROWSER_ERRORS
            ),
        },
        examples=[
            OpenApiExample(
                "A signup",
                request_only=True,
                value={
                    "key": "pk_Tq3bS0xWz2h5nE8rVb1yQk9P",
                    "event": "lead",
                    "click_id": "3q2-7wEvRm0gq8TzLh1YXw",
                    "customer": {"email": "ada@example.com", "name": "Ada Lovelace"},
                },
            ),
            OpenApiExample(
                "Stored",
                response_only=True,
                status_codes=[201],
                value={
                    "id": 2,
                    "event": "lead",
                    "click_id": "3q2-7wEvRm0gq8TzLh1YXw",
                    "link_id": 7,
                    "occurred_at": "2026-11-21T22:53:54.057780Z",
                },
            ),
        ],
    )
    def create(self, request) -> Response:
        data = parse(BrowserConversionInput, request_json(request))
        customer = data.get("customer")
        conversion, stored = pixel_lead_record(
            workspace=self.workspace,
            click_id=data["click_id"],
            customer=None if customer is None else {"email": customer["email"], "name": customer.get("name") or ""},
        )
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
