"""OpenAPI description of POST and GET /api/v1/conversions (conversions/api.py): the answers' shapes (the view
builds them by hand), the operations' texts, examples and errors, and the messages both the view and the schema name."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema_serializer
from rest_framework import serializers

from conversions.services import IDEMPOTENCY_KEY_MAX, IDEMPOTENCY_TTL
from lftrack.currencies import MONEY_MAX
from lftrack.openapi import PAGE_PARAMETERS, error_responses, page_of, string_messages
from lftrack.pagination import PAGE_ERRORS

# Messages ConversionInput answers with (conversions/api.py), listed in CONVERSION_ERRORS.
VALUE_CENTS_ERROR = "value_cents must be a non-negative integer"
VALUE_CENTS_TOO_LARGE = f"value_cents must be at most {MONEY_MAX}"
CURRENCY_ERROR = "currency must be an ISO 4217 code"
CURRENCY_NOT_A_STRING = "currency must be a string"

# value_cents and currency are taken as sent and checked on a sale only (ConversionInput.validate): typed here.
VALUE_CENTS = {
    "type": "integer",
    "format": "int64",
    "minimum": 0,
    "maximum": MONEY_MAX,
    "description": f"A sale's value in the smallest currency unit (49000 is 490.00), at most {MONEY_MAX} (2^53 - 1). "
    "Ignored on a lead, whatever it holds.",
}
CURRENCY = {
    "type": "string",
    "maxLength": 3,
    "description": "A sale's currency, an ISO 4217 code in any letter case (`eur`); `value_cents` is in its minor "
    "unit (cents; yen for JPY, which has none; fils for KWD, a thousandth). Absent: the workspace's currency (USD "
    "unless changed in its settings). Ignored on a lead, whatever it holds.",
}


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


@extend_schema_serializer(component_name="ConversionRead")
class ConversionReadOut(ConversionOut):
    """A stored event as the read API shows it: the POST's answer and what else was sent."""

    value_cents = serializers.IntegerField(allow_null=True)
    event_name = serializers.CharField(allow_null=True)
    meta = serializers.DictField()
    channel = serializers.ChoiceField(choices=["api", "pixel", "manual"])
    invoice_id = serializers.CharField(allow_null=True)
    currency = serializers.CharField(allow_null=True, help_text="A sale's ISO 4217 code; null on a lead.")
    refunded_cents = serializers.IntegerField(allow_null=True, help_text="What was refunded of a sale; null on a lead.")
    net_cents = serializers.IntegerField(allow_null=True, help_text="value_cents - refunded_cents; null on a lead.")


ConversionPageOut = page_of(ConversionReadOut, "ConversionPage")


READ_ERRORS = [
    "invalid event",
    "link_id must be an integer",
    "customer_id must be an integer",
    "since must be an ISO 8601 time with an offset",
    "until must be an ISO 8601 time with an offset",
    "since is after until",
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


CONVERSION_LIST = {
    "operation_id": "conversion_list",
    "summary": "List leads and sales, newest first",
    "description": "The workspace's events by `occurred_at`, newest first, a page at a time: pass the answer's "
    "`next` as `cursor` for the following page (an event recorded meanwhile never shifts later pages). "
    "Limits: 600 requests a minute per token and per client address.",
    "tags": ["conversions"],
    "parameters": [
        OpenApiParameter("event", str, enum=["lead", "sale"], description="Only leads or only sales."),
        OpenApiParameter("link_id", int, description="Only the events of this link."),
        OpenApiParameter("customer_id", int, description="Only the events of this customer."),
        OpenApiParameter("since", OpenApiTypes.DATETIME, description="Events at or after this time (with an offset)."),
        OpenApiParameter(
            "until", OpenApiTypes.DATETIME, description="Events before this time (with an offset); not before `since`."
        ),
        *PAGE_PARAMETERS,
    ],
    "responses": {
        200: OpenApiResponse(ConversionPageOut, description="A page of events."),
        **error_responses(400, 401, 403, 422, 429, 500, 503, e422=READ_ERRORS),
    },
}

CONVERSION_CREATE = {
    "operation_id": "conversion_create",
    "summary": "Record a lead or a sale against a click",
    "description": "Stores the event against the click's link (and so its post), matches or creates the customer "
    "(docs/matching.md) and enrolls them in the post's campaign, if any. Limits: 1,000 requests a minute per token "
    "and 600 per client address.",
    "tags": ["conversions"],
    "parameters": [IDEMPOTENCY_KEY],
    "responses": {
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
    "examples": [
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
}
