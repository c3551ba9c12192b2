"""POST /api/v1/customers/{id}/tags and DELETE /customers/{id}/tags/{tag} (docs/api.md, "Customer tags"): a contact's tags
as an integrator sets them, through the service the back office and the CSV import call (customers/tags.py)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.response import Response

from customers import tags_openapi
from customers.models import Customer
from customers.selectors import customer_by_reference
from customers.tags import MAX_TAG_LENGTH, MAX_TAGS, contact_tags_add, contact_tags_remove
from lftrack.errors import NotFound
from lftrack.fields import StrictStringListField
from lftrack.parsers import parse
from lftrack.ratelimit import Limit, ip_key, rate_limit, token_key

TAG_LIMITS = (Limit("tags-token", token_key, "RATELIMIT_READ_TOKEN"), Limit("tags-ip", ip_key, "RATELIMIT_READ_IP"))


class TagsInput(serializers.Serializer):
    # Longer items than a tag may be pass here so the service names the problem ("tag is too long").
    tags = StrictStringListField(max_items=MAX_TAGS, max_length=MAX_TAG_LENGTH * 4, help_text="Tags to add.")


def _customer(request, customer_id: str) -> Customer:
    customer = customer_by_reference(
        workspace_id=request.auth.workspace_id, reference=customer_id, test=request.auth.is_test
    )
    if customer is None:
        raise NotFound("unknown customer")
    return customer


class CustomerTagViewSet(viewsets.ViewSet):
    required_scopes = {"create": "customers:write", "destroy": "customers:write"}  # workspaces/auth.py
    lookup_url_kwarg = "tag"
    lookup_value_regex = "[^/]+"

    @extend_schema(request=TagsInput, **tags_openapi.TAGS_ADD)
    @rate_limit(*TAG_LIMITS)
    def create(self, request, customer_id: str) -> Response:
        data = parse(TagsInput, request.data)
        customer = _customer(request, customer_id)
        return Response({"id": customer.pk, "tags": contact_tags_add(customer=customer, names=data["tags"])})

    @extend_schema(**tags_openapi.TAGS_REMOVE)
    @rate_limit(*TAG_LIMITS)
    def destroy(self, request, customer_id: str, tag: str) -> Response:
        customer = _customer(request, customer_id)
        return Response({"id": customer.pk, "tags": contact_tags_remove(customer=customer, names=[tag])})
