"""OpenAPI description of /api/v1/links (rollups/links_api.py): the answers' shapes (the view builds them by hand), the
operations' texts, examples and errors, and the bounds and messages both the view and the schema name."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema_serializer
from rest_framework import serializers

from clicks.links import KEY_RULE, TAG_NAME_MAX, TAGS_MAX
from conversions.openapi import IDEMPOTENCY_KEY, IDEMPOTENCY_KEY_INVALID, IDEMPOTENCY_KEY_LONG, IDEMPOTENCY_KEY_REUSED
from lftrack.openapi import PAGE_PARAMETERS, error_responses, page_of, string_messages
from lftrack.pagination import PAGE_ERRORS
from rollups.openapi import NumbersOut

BULK_MAX = 100  # links per bulk call: one transaction, one answer (docs/security.md, "Every public door")
UNKNOWN = "unknown link"
ID = OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH, description="The link's id.")
_UTM = ("utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content")
CHANGE_ERRORS = [
    KEY_RULE,
    "key is reserved: <key>",
    "key is taken: <key>",
    "destination must be an http or https URL",
    "fallback_url must be an http or https URL",
    f"a tag is 1 to {TAG_NAME_MAX} characters",
    f"a link has at most {TAGS_MAX} tags",
    "expires_at must be an ISO 8601 time with an offset",
    "tags must be a list of strings",
    "tags is too long",
    "archived must be a boolean",
    *string_messages("destination", "key", "expires_at", "fallback_url", *_UTM),
]
CREATE_ERRORS = [
    *CHANGE_ERRORS,
    "unknown post",
    "unknown campaign: <slug>",
    "post_id must be an integer",
    *string_messages("post_title", "campaign"),
    IDEMPOTENCY_KEY_LONG,
    IDEMPOTENCY_KEY_INVALID,
    IDEMPOTENCY_KEY_REUSED,
]
BULK_ERRORS = [
    f"links must be a list of 1 to {BULK_MAX} links",
    "links[<index>]: a link must be an object",
    "links[<index>]: <any message of a single link>",
    IDEMPOTENCY_KEY_LONG,
    IDEMPOTENCY_KEY_INVALID,
    IDEMPOTENCY_KEY_REUSED,
]
LIST_ERRORS = ["post_id must be an integer", "archived must be true or false", *PAGE_ERRORS]
_WRITE = (400, 401, 403, 413, 415, 422, 429, 500, 503)


@extend_schema_serializer(component_name="Link")
class LinkOut(serializers.Serializer):
    id = serializers.IntegerField()
    key = serializers.CharField(help_text="Case-sensitive; the link is `/l/<key>`.")
    short_url = serializers.CharField()
    destination = serializers.CharField(help_text="Where visitors go, the UTM fields composed in.")
    post_id = serializers.IntegerField()
    campaign = serializers.CharField(allow_null=True, help_text="The slug of the post's campaign.")
    utm_source = serializers.CharField(allow_null=True)
    utm_medium = serializers.CharField(allow_null=True)
    utm_campaign = serializers.CharField(allow_null=True)
    utm_term = serializers.CharField(allow_null=True)
    utm_content = serializers.CharField(allow_null=True)
    tags = serializers.ListField(child=serializers.CharField())
    expires_at = serializers.DateTimeField(allow_null=True)
    fallback_url = serializers.CharField(allow_null=True)
    archived = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


@extend_schema_serializer(component_name="LinkWithNumbers")
class LinkReadOut(LinkOut):
    numbers = NumbersOut(help_text='Of all time, from the roll-ups and the rows since (docs/api.md, "Links").')


class LinkBulkOut(serializers.Serializer):
    data = LinkOut(many=True, help_text="The links made, in the order sent.")


LinkPageOut = page_of(LinkOut, "LinkPage")

LINK_LIST = {
    "operation_id": "link_list",
    "summary": "List links, newest first",
    "tags": ["links"],
    "description": "The workspace's links (deleted ones never; archived ones only with `archived=true`), newest "
    "first, a page at a time. Limits: 600 requests a minute per token and per address.",
    "parameters": [
        OpenApiParameter("post_id", int, description="Only the links of this post."),
        OpenApiParameter("campaign", str, description="Only the links of posts in this campaign (its slug)."),
        OpenApiParameter("tag", str, description="Only the links with this tag (any letter case)."),
        OpenApiParameter("search", str, description="Part of the destination or the key (any letter case)."),
        OpenApiParameter("archived", str, enum=["true", "false"], description="Archived links instead (`true`)."),
        *PAGE_PARAMETERS,
    ],
    "responses": {
        200: OpenApiResponse(LinkPageOut, description="A page of links."),
        **error_responses(400, 401, 403, 422, 429, 500, 503, e422=LIST_ERRORS),
    },
}

LINK_CREATE = {
    "operation_id": "link_create",
    "summary": "Make a tracked link",
    "tags": ["links"],
    "description": "A link to `destination` with the UTM fields composed in (a parameter the destination already "
    "has is replaced, never repeated), in a post (`post_id`, `post_title`, or a new one of its own) and, with "
    "`campaign`, that post put in the campaign. `key` is chosen or 8 random characters. Limits: 120 requests "
    "a minute per token, 600 per address.",
    "parameters": [IDEMPOTENCY_KEY],
    "responses": {
        201: OpenApiResponse(
            LinkOut, description="Made; or, with `Idempotent-Replayed: true`, the link first made for this key."
        ),
        **error_responses(*_WRITE, e422=CREATE_ERRORS),
    },
    "examples": [
        OpenApiExample(
            "A spring sale link",
            request_only=True,
            value={
                "destination": "https://shop.example.com/spring?ref=ig",
                "key": "spring-sale",
                "utm_source": "instagram",
                "utm_medium": "social",
                "tags": ["spring", "instagram"],
            },
        )
    ],
}

LINK_BULK = {
    "operation_id": "link_bulk_create",
    "summary": "Make up to 100 links at once",
    "tags": ["links"],
    "description": f"Each of `links` as the single create takes it, 1 to {BULK_MAX}: all are made, or none and the "
    "first refused one is named by its index (`links[3]: key is taken: spring`). Limits: as a single create.",
    "parameters": [IDEMPOTENCY_KEY],
    "responses": {
        201: OpenApiResponse(LinkBulkOut, description="Made, in the order sent."),
        **error_responses(*_WRITE, e422=BULK_ERRORS),
    },
}

LINK_RETRIEVE = {
    "operation_id": "link_retrieve",
    "summary": "Read a link and its numbers",
    "tags": ["links"],
    "parameters": [ID],
    "responses": {
        200: OpenApiResponse(LinkReadOut, description="The link, with its clicks, leads, sales and net revenue."),
        **error_responses(400, 401, 403, 404, 429, 500, 503, e404=[UNKNOWN]),
    },
}

LINK_UPDATE = {
    "operation_id": "link_update",
    "summary": "Change, archive or unarchive a link",
    "tags": ["links"],
    "parameters": [ID],
    "description": "What is sent changes; the rest stays (a new destination keeps the UTM fields it does not set "
    "itself). The next click follows the change, on every server. Each change is kept in the link's history. "
    "`archived: true` hides the link from lists; it still redirects.",
    "responses": {
        200: OpenApiResponse(LinkOut, description="The link as changed."),
        **error_responses(*_WRITE, 404, e404=[UNKNOWN], e422=CHANGE_ERRORS),
    },
}

LINK_DELETE = {
    "operation_id": "link_delete",
    "summary": "Delete a link",
    "tags": ["links"],
    "parameters": [ID],
    "description": "Its key answers 404 from then on (or the workspace's fallback page) and is never given to "
    "another link; its clicks and conversions stay in the numbers.",
    "responses": {
        204: OpenApiResponse(description="Deleted."),
        **error_responses(400, 401, 403, 404, 429, 500, 503, e404=[UNKNOWN]),
    },
}
