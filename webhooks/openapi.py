"""OpenAPI description of /api/v1/webhooks (webhooks/api.py): the answers' shapes (the view builds them by hand),
the operations' texts, examples and errors, and the message both the view and the schema name."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema_serializer
from rest_framework import serializers

from lftrack.openapi import error_responses, string_messages
from webhooks.services import OVERLAP_MAX_HOURS

URL_ERRORS = [
    "url must be an absolute https URL",
    "url must be https",
    "url must not carry credentials",
    "url host does not resolve",
    "url resolves to a private, loopback or link-local address",
]
TYPE_ERRORS = [
    "event_types must be a list of strings",
    "event_types is too long",
    "event_types must name at least one event type",
    "unknown event type: <type>",
]
INPUT_ERRORS = [*URL_ERRORS, *TYPE_ERRORS, *string_messages("url", "description"), "enabled must be a boolean"]
UNKNOWN = "unknown webhook"
ID = OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The endpoint's id.")
_WRITE = (400, 401, 403, 413, 415, 422, 429, 500, 503)


@extend_schema_serializer(component_name="WebhookEndpoint")
class EndpointOut(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    event_types = serializers.ListField(child=serializers.CharField())
    enabled = serializers.BooleanField()
    test = serializers.BooleanField(help_text="A test-mode endpoint receives test-mode events only.")
    disabled_reason = serializers.CharField(allow_null=True, help_text="Why it was disabled, while it is.")
    failures_in_row = serializers.IntegerField()
    created_at = serializers.DateTimeField()


@extend_schema_serializer(component_name="WebhookEndpointWithSecret")
class EndpointSecretOut(EndpointOut):
    secret = serializers.CharField(help_text="The signing secret (`whsec_...`), shown this once.")


class EndpointListOut(serializers.Serializer):
    data = EndpointOut(many=True)


WEBHOOK_LIST = {
    "operation_id": "webhook_list",
    "summary": "List webhook endpoints",
    "tags": ["webhooks"],
    "description": "The workspace's endpoints of the token's mode (at most 10 in all): a test token's are test "
    "endpoints. Limits: 600 requests a minute per token and per address.",
    "responses": {
        200: OpenApiResponse(EndpointListOut, description="The endpoints, oldest first."),
        **error_responses(400, 401, 403, 429, 500, 503),
    },
}

WEBHOOK_CREATE = {
    "operation_id": "webhook_create",
    "summary": "Add a webhook endpoint",
    "tags": ["webhooks"],
    "description": "lftrack POSTs each event of `event_types` to `url`, signed per Standard Webhooks with the "
    "`secret` of the answer (shown this once). The URL must be https and resolve to a public address. A test "
    "token makes a test endpoint, which receives test events only. Limits: "
    "120 requests a minute per token, 600 per address.",
    "responses": {
        201: OpenApiResponse(EndpointSecretOut, description="Created; `secret` is never shown again."),
        **error_responses(*_WRITE, e422=[*INPUT_ERRORS, "a workspace has at most 10 webhook endpoints"]),
    },
    "examples": [
        OpenApiExample(
            "Sales and leads",
            request_only=True,
            value={"url": "https://crm.example.com/hooks/lftrack", "event_types": ["lead.created", "sale.created"]},
        )
    ],
}

WEBHOOK_RETRIEVE = {
    "operation_id": "webhook_retrieve",
    "summary": "Read a webhook endpoint",
    "tags": ["webhooks"],
    "parameters": [ID],
    "responses": {
        200: OpenApiResponse(EndpointOut, description="The endpoint."),
        **error_responses(400, 401, 403, 404, 429, 500, 503, e404=[UNKNOWN]),
    },
}

WEBHOOK_UPDATE = {
    "operation_id": "webhook_update",
    "summary": "Change a webhook endpoint",
    "tags": ["webhooks"],
    "parameters": [ID],
    "description": "What is sent changes; the rest stays. `enabled: true` on a disabled endpoint re-enables it: "
    "its failure count starts over and the deliveries it missed while disabled go out.",
    "responses": {
        200: OpenApiResponse(EndpointOut, description="The endpoint as changed."),
        **error_responses(*_WRITE, 404, e404=[UNKNOWN], e422=INPUT_ERRORS),
    },
}

WEBHOOK_DELETE = {
    "operation_id": "webhook_delete",
    "summary": "Delete a webhook endpoint",
    "tags": ["webhooks"],
    "parameters": [ID],
    "description": "With its deliveries and their log.",
    "responses": {
        204: OpenApiResponse(description="Deleted."),
        **error_responses(400, 401, 403, 404, 429, 500, 503, e404=[UNKNOWN]),
    },
}

WEBHOOK_ROTATE_SECRET = {
    "operation_id": "webhook_rotate_secret",
    "summary": "Rotate an endpoint's signing secret",
    "tags": ["webhooks"],
    "parameters": [ID],
    "description": "A new secret, in the answer only. During the overlap each request carries two signatures, "
    "one per secret, so a receiver verifies with either while it switches.",
    "responses": {
        200: OpenApiResponse(EndpointSecretOut, description="The new `secret`, shown this once."),
        **error_responses(*_WRITE, 404, e404=[UNKNOWN], e422=[f"overlap_hours must be 0 to {OVERLAP_MAX_HOURS}"]),
    },
}
