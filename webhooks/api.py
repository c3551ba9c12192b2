"""/api/v1/webhooks: a workspace's webhook endpoints (scope `webhooks`; docs/webhooks.md; described in
webhooks/openapi.py)."""

from drf_spectacular.utils import extend_schema
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
from lftrack.openapi import PagedAutoSchema
from lftrack.parsers import parse, request_json
from lftrack.ratelimit import READ_LIMITS, Limit, ip_key, rate_limit, token_key
from webhooks import openapi
from webhooks.events import EVENT_TYPES
from webhooks.models import Endpoint
from webhooks.openapi import UNKNOWN
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


class WebhookEndpointViewSet(viewsets.ViewSet):
    required_scopes = dict.fromkeys(
        ("list", "create", "retrieve", "partial_update", "destroy", "rotate_secret"), "webhooks"
    )
    schema = PagedAutoSchema()
    lookup_value_regex = "[^/]+"

    @extend_schema(**openapi.WEBHOOK_LIST)
    @rate_limit(*READ_LIMITS)
    def list(self, request) -> Response:
        endpoints = _endpoints(request).order_by("pk")
        return Response({"data": [endpoint_out(e) for e in endpoints]})

    @extend_schema(request=EndpointInput, **openapi.WEBHOOK_CREATE)
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

    @extend_schema(**openapi.WEBHOOK_RETRIEVE)
    @rate_limit(*READ_LIMITS)
    def retrieve(self, request, pk: str) -> Response:
        return Response(endpoint_out(_endpoint(request, pk)))

    @extend_schema(request=EndpointChange, **openapi.WEBHOOK_UPDATE)
    @rate_limit(*WRITE_LIMITS)
    def partial_update(self, request, pk: str) -> Response:
        data = parse(EndpointChange, request_json(request))
        endpoint = endpoint_update(endpoint=_endpoint(request, pk), **data)
        return Response(endpoint_out(endpoint))

    @extend_schema(**openapi.WEBHOOK_DELETE)
    @rate_limit(*WRITE_LIMITS)
    def destroy(self, request, pk: str) -> Response:
        endpoint_delete(endpoint=_endpoint(request, pk))
        return Response(status=204)

    @extend_schema(request=RotateInput, **openapi.WEBHOOK_ROTATE_SECRET)
    @action(detail=True, methods=["post"], url_path="rotate-secret")
    @rate_limit(*WRITE_LIMITS)
    def rotate_secret(self, request, pk: str) -> Response:
        data = parse(RotateInput, request_json(request))
        issued = endpoint_secret_rotate(endpoint=_endpoint(request, pk), overlap_hours=data.get("overlap_hours"))
        return Response({**endpoint_out(issued.endpoint), "secret": issued.secret})
