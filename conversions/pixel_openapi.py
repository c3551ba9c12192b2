"""OpenAPI description of the pixel's POST /api/v1/browser/conversions and its CORS preflight
(conversions/pixel_api.py), with the preflight's grant both name."""

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema_serializer
from rest_framework import serializers

from lftrack.openapi import error_response_object, error_responses, string_messages


@extend_schema_serializer(component_name="BrowserConversion")
class BrowserConversionOut(serializers.Serializer):
    """The stored lead, without customer data: the key is public."""

    id = serializers.IntegerField()
    event = serializers.ChoiceField(choices=["lead"])
    click_id = serializers.CharField()
    link_id = serializers.IntegerField()
    occurred_at = serializers.DateTimeField()


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


BROWSER_CONVERSION_CREATE = {
    "operation_id": "browser_conversion_create",
    "summary": "Record a lead from the pixel",
    "description": "Called by `lf.js`, not meant to be called directly. Leads only. A request carrying `Origin` "
    "must come from one of the workspace's allowed origins (403 otherwise), which then may read the answer "
    "(`Access-Control-Allow-Origin`). The body may be sent as `text/plain` holding JSON, as "
    "`navigator.sendBeacon` does. With a customer email it creates or matches a contact and fills blanks; it "
    "never moves an external_id nor overwrites anything. Limits: 600 requests a minute per client address "
    "(every request counts, preflights and wrong keys too) and 6,000 per tracking key.",
    "tags": ["pixel"],
    "responses": {
        201: OpenApiResponse(BrowserConversionOut, description="Stored."),
        200: OpenApiResponse(
            BrowserConversionOut,
            description="The click has 3 pixel leads already: the latest of them, nothing stored.",
        ),
        **error_responses(
            400, 401, 403, 413, 415, 422, 429, 500, 503, e403=["origin not allowed"], e422=BROWSER_ERRORS
        ),
    },
    "examples": [
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
}

# drf-spectacular never inspects OPTIONS; lftrack.openapi.postprocess adds this description of `options()`.
BROWSER_CONVERSION_PREFLIGHT = {
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
