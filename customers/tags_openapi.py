"""OpenAPI description of POST /api/v1/customers/{id}/tags and DELETE /customers/{id}/tags/{tag} (customers/tags_api.py)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema_serializer
from rest_framework import serializers

from customers.tags import MAX_TAG_LENGTH, MAX_TAGS
from lftrack.openapi import error_responses

TAG_ERRORS = [
    "tags must be a list of strings",
    "tags is too long",
    "tag is empty",
    "tag is too long",
    "tag has characters other than letters, digits, spaces and . : / + & -",
    f"a contact has at most {MAX_TAGS} tags",
]


@extend_schema_serializer(component_name="CustomerTags")
class TagsOut(serializers.Serializer):
    id = serializers.IntegerField(help_text="The customer's id.")
    tags = serializers.ListField(child=serializers.CharField(), help_text="All their tags now, sorted.")


_ID = OpenApiParameter("customer_id", OpenApiTypes.STR, OpenApiParameter.PATH, description="`12` or `ext_user_42`.")

TAGS_ADD = {
    "operation_id": "customer_tags_add",
    "summary": "Tag a customer",
    "description": "Adds tags to the customer; tags they have already stay as they are, so a retry changes "
    f"nothing. A tag is stored lower-cased (`VIP` and `vip` are one), at most {MAX_TAG_LENGTH} characters of "
    f"letters, digits, spaces and `. : / + & -`; a customer has at most {MAX_TAGS}. Segments select customers "
    'by tag (docs/email.md, "Segments"). Needs the `customers:write` scope (or a token without scopes). '
    "Limits: 600 requests a minute per token and per client address.",
    "tags": ["customers"],
    "parameters": [_ID],
    "responses": {
        200: OpenApiResponse(TagsOut, description="The customer's tags after the change."),
        **error_responses(400, 401, 403, 404, 413, 415, 422, 429, 500, 503, e404=["unknown customer"], e422=TAG_ERRORS),
    },
}

TAGS_REMOVE = {
    "operation_id": "customer_tags_remove",
    "summary": "Untag a customer",
    "description": "Removes one tag (in any letter case; one they do not have is not an error). Needs the "
    "`customers:write` scope (or a token without scopes). Limits: as adding.",
    "tags": ["customers"],
    "parameters": [_ID, OpenApiParameter("tag", OpenApiTypes.STR, OpenApiParameter.PATH, description="`vip`.")],
    "responses": {
        200: OpenApiResponse(TagsOut, description="The customer's tags after the change."),
        **error_responses(400, 401, 403, 404, 422, 429, 500, 503, e404=["unknown customer"], e422=TAG_ERRORS[2:5]),
    },
}
