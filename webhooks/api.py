"""/api/v1/webhooks: a workspace's webhook endpoints (scope `webhooks`; docs/webhooks.md)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from lftrack.db import as_id
from lftrack.errors import NotFound
from lftrack.fields import (
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictStringListField,
    iso_utc,
    optional,
)
from lftrack.openapi import PagedAutoSchema, error_responses, string_messages
from lftrack.parsers import parse, request_json
from lftrack.ratelimit import READ_LIMITS, Limit, ip_key, rate_limit, token_key
from webhooks.events import EVENT_TYPES
from webhooks.models import Endpoint
from webhooks.services import (
    OVERLAP_MAX_HOURS,
    endpoint_create,
    endpoint_delete,
    endpoint_secret_rotate,
    endpoint_update,
)

WRITE_LIMITS = (
    Limit("webhooks-token", token_key, "RATELIMIT_WEBHOOKS_TOKEN"),
    Limit("webhooks-ip", ip_key, "RATELIMIT_WEBHOOKS_IP"),
)
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


class EndpointInput(serializers.Serializer):
    url = StrictCharField(max_length=2048, allow_blank=False, help_text="https, on a public address.")
    event_types = StrictStringListField(
        max_items=len(EVENT_TYPES),
        max_length=40,
        choices=list(EVENT_TYPES),
        help_text="The event types it receives (docs/webhooks.md).",
    )
    description = StrictCharField(max_length=200, required=False)
    enabled = StrictBooleanField(required=False)


class EndpointChange(EndpointInput):
    url = StrictCharField(max_length=2048, allow_blank=False, required=False)
    event_types = StrictStringListField(
        max_items=len(EVENT_TYPES), max_length=40, choices=list(EVENT_TYPES), required=False
    )


class RotateInput(serializers.Serializer):
    overlap_hours = StrictIntegerField(
        min_value=0,
        max_value=OVERLAP_MAX_HOURS,
        required=False,
        error_messages={"invalid": f"overlap_hours must be 0 to {OVERLAP_MAX_HOURS}"},
        help_text="How long the old secret keeps signing beside the new one (default 24; 0: retire it now).",
    )


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


def endpoint_out(endpoint: Endpoint) -> dict:
    return {
        "id": endpoint.pk,
        "url": endpoint.url,
        "description": optional(endpoint.description),
        "event_types": list(endpoint.event_types),
        "enabled": endpoint.enabled,
        "test": endpoint.test,
        "disabled_reason": None if endpoint.enabled else endpoint.disabled_reason or "disabled by hand",
        "failures_in_row": endpoint.failures_in_row,
        "created_at": iso_utc(endpoint.created_at),
    }


def _endpoints(request):
    """The endpoints a token manages: its workspace's of its mode. A test token's are test endpoints, which get test
    events only; a live endpoint (live customers' data) is out of its reach, as live rows are out of its reads."""
    return Endpoint.objects.filter(workspace_id=request.auth.workspace_id, test=request.auth.is_test)


def _endpoint(request, pk: str) -> Endpoint:
    endpoint_id = as_id(pk)
    endpoint = None if endpoint_id is None else _endpoints(request).filter(pk=endpoint_id).first()
    if endpoint is None:  # another workspace's, or another mode's, is as unknown as a missing one
        raise NotFound(UNKNOWN)
    return endpoint


_WRITE = (400, 401, 403, 413, 415, 422, 429, 500, 503)


class WebhookEndpointViewSet(viewsets.ViewSet):
    required_scopes = dict.fromkeys(
        ("list", "create", "retrieve", "partial_update", "destroy", "rotate_secret"), "webhooks"
    )
    schema = PagedAutoSchema()
    lookup_value_regex = "[^/]+"

    @extend_schema(
        operation_id="webhook_list",
        summary="List webhook endpoints",
        tags=["webhooks"],
        description="The workspace's endpoints of the token's mode (at most 10 in all): a test token's are test "
        "endpoints. Limits: 600 requests a minute per token and per address.",
        responses={
            200: OpenApiResponse(EndpointListOut, description="The endpoints, oldest first."),
            **error_responses(400, 401, 403, 429, 500, 503),
        },
    )
    @rate_limit(*READ_LIMITS)
    def list(self, request) -> Response:
        endpoints = _endpoints(request).order_by("pk")
        return Response({"data": [endpoint_out(e) for e in endpoints]})

    @extend_schema(
        operation_id="webhook_create",
        summary="Add a webhook endpoint",
        tags=["webhooks"],
        description="lftrack POSTs each event of `event_types` to `url`, signed per Standard Webhooks with the "
        "`secret` of the answer (shown this once). The URL must be https and resolve to a public address. A test "
        "token makes a test endpoint, which receives test events only. Limits: "
        "120 requests a minute per token, 600 per address.",
        request=EndpointInput,
        responses={
            201: OpenApiResponse(EndpointSecretOut, description="Created; `secret` is never shown again."),
            **error_responses(*_WRITE, e422=[*INPUT_ERRORS, "a workspace has at most 10 webhook endpoints"]),
        },
        examples=[
            OpenApiExample(
                "Sales and leads",
                request_only=True,
                value={"url": "https://crm.example.com/hooks/lftrack", "event_types": ["lead.created", "sale.created"]},
            )
        ],
    )
    @rate_limit(*WRITE_LIMITS)
    def create(self, request) -> Response:
        data = parse(EndpointInput, request_json(request))
        issued = endpoint_create(
            workspace=request.auth.workspace,
            url=data["url"],
            event_types=data["event_types"],
            description=data.get("description", ""),
            enabled=data.get("enabled", True),
            test=request.auth.is_test,
        )
        return Response({**endpoint_out(issued.endpoint), "secret": issued.secret}, status=201)

    @extend_schema(
        operation_id="webhook_retrieve",
        summary="Read a webhook endpoint",
        tags=["webhooks"],
        parameters=[ID],
        responses={
            200: OpenApiResponse(EndpointOut, description="The endpoint."),
            **error_responses(400, 401, 403, 404, 429, 500, 503, e404=[UNKNOWN]),
        },
    )
    @rate_limit(*READ_LIMITS)
    def retrieve(self, request, pk: str) -> Response:
        return Response(endpoint_out(_endpoint(request, pk)))

    @extend_schema(
        operation_id="webhook_update",
        summary="Change a webhook endpoint",
        tags=["webhooks"],
        parameters=[ID],
        description="What is sent changes; the rest stays. `enabled: true` on a disabled endpoint re-enables it: "
        "its failure count starts over and the deliveries it missed while disabled go out.",
        request=EndpointChange,
        responses={
            200: OpenApiResponse(EndpointOut, description="The endpoint as changed."),
            **error_responses(*_WRITE, 404, e404=[UNKNOWN], e422=INPUT_ERRORS),
        },
    )
    @rate_limit(*WRITE_LIMITS)
    def partial_update(self, request, pk: str) -> Response:
        data = parse(EndpointChange, request_json(request))
        endpoint = endpoint_update(endpoint=_endpoint(request, pk), **data)
        return Response(endpoint_out(endpoint))

    @extend_schema(
        operation_id="webhook_delete",
        summary="Delete a webhook endpoint",
        tags=["webhooks"],
        parameters=[ID],
        description="With its deliveries and their log.",
        responses={
            204: OpenApiResponse(description="Deleted."),
            **error_responses(400, 401, 403, 404, 429, 500, 503, e404=[UNKNOWN]),
        },
    )
    @rate_limit(*WRITE_LIMITS)
    def destroy(self, request, pk: str) -> Response:
        endpoint_delete(endpoint=_endpoint(request, pk))
        return Response(status=204)

    @extend_schema(
        operation_id="webhook_rotate_secret",
        summary="Rotate an endpoint's signing secret",
        tags=["webhooks"],
        parameters=[ID],
        request=RotateInput,
        description="A new secret, in the answer only. During the overlap each request carries two signatures, "
        "one per secret, so a receiver verifies with either while it switches.",
        responses={
            200: OpenApiResponse(EndpointSecretOut, description="The new `secret`, shown this once."),
            **error_responses(*_WRITE, 404, e404=[UNKNOWN], e422=[f"overlap_hours must be 0 to {OVERLAP_MAX_HOURS}"]),
        },
    )
    @action(detail=True, methods=["post"], url_path="rotate-secret")
    @rate_limit(*WRITE_LIMITS)
    def rotate_secret(self, request, pk: str) -> Response:
        data = parse(RotateInput, request_json(request))
        issued = endpoint_secret_rotate(endpoint=_endpoint(request, pk), overlap_hours=data.get("overlap_hours"))
        return Response({**endpoint_out(issued.endpoint), "secret": issued.secret})
