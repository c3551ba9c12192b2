"""/api/v1/links: make, list, read (with its numbers), change, archive and delete tracked links (docs/api.md, "Links";
described in rollups/links_openapi.py). Here, above the apps it calls: campaigns (a link's campaign), conversions
(`Idempotency-Key`) and the roll-ups (a link's numbers)."""

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from campaigns.models import Campaign
from campaigns.services import campaign_link_create, campaign_links_create
from clicks.links import TAG_NAME_MAX, TAGS_MAX, UTM_MAX, link_archive, link_delete, link_update
from clicks.models import UTM_FIELDS, Link, Post
from conversions.services import Answer, idempotency_key_check, idempotent_answer, request_digest
from lftrack.db import as_id
from lftrack.errors import NotFound, Unprocessable
from lftrack.fields import (
    StrictBooleanField,
    StrictCharField,
    StrictIntegerField,
    StrictStringListField,
    aware_utc,
    iso_utc,
    optional,
)
from lftrack.openapi import PagedAutoSchema
from lftrack.pagination import page_out, page_position, query_int
from lftrack.parsers import parse, request_json
from lftrack.ratelimit import READ_LIMITS, Limit, ip_key, rate_limit, token_key
from rollups import links_openapi as openapi
from rollups.links_openapi import BULK_MAX, UNKNOWN
from rollups.selectors import link_numbers

WRITE_LIMITS = (
    Limit("links-token", token_key, "RATELIMIT_LINKS_TOKEN"),
    Limit("links-ip", ip_key, "RATELIMIT_LINKS_IP"),
)


class LinkChangeInput(serializers.Serializer):
    destination = StrictCharField(max_length=2048, allow_blank=False, required=False)
    key = StrictCharField(max_length=64, required=False)  # "" is refused by the key rule, named
    tags = StrictStringListField(max_items=TAGS_MAX, max_length=TAG_NAME_MAX, required=False)
    expires_at = StrictCharField(max_length=64, required=False, allow_null=True, help_text="ISO 8601 with an offset.")
    fallback_url = StrictCharField(max_length=2048, required=False)
    archived = StrictBooleanField(required=False, help_text="true: out of lists, still redirecting; false: back.")
    utm_source = StrictCharField(max_length=UTM_MAX, required=False)
    utm_medium = StrictCharField(max_length=UTM_MAX, required=False)
    utm_campaign = StrictCharField(max_length=UTM_MAX, required=False)
    utm_term = StrictCharField(max_length=UTM_MAX, required=False)
    utm_content = StrictCharField(max_length=UTM_MAX, required=False)

    def validate(self, attrs: dict) -> dict:
        if attrs.get("expires_at") is not None:
            attrs["expires_at"] = aware_utc(attrs["expires_at"])
            if attrs["expires_at"] is None:
                raise serializers.ValidationError("expires_at must be an ISO 8601 time with an offset")
        return attrs


class LinkInput(LinkChangeInput):
    destination = StrictCharField(max_length=2048, allow_blank=False, help_text="http or https.")
    key = StrictCharField(max_length=64, required=False, help_text="Absent: 8 random characters.")
    post_id = StrictIntegerField(min_value=1, required=False, help_text="An existing post of the workspace.")
    post_title = StrictCharField(max_length=200, required=False, help_text="A post by title, made if missing.")
    campaign = StrictCharField(max_length=100, required=False, help_text="A campaign's slug: the post is put in it.")
    archived = None


# The schema of a bulk call: the view parses each link with LinkInput itself, to name the index of a bad one.
class BulkInput(serializers.Serializer):
    links = LinkInput(many=True, min_length=1, max_length=BULK_MAX, help_text=f"1 to {BULK_MAX} links.")


def link_out(link: Link) -> dict:
    campaign = getattr(link.post, "campaign_post", None)
    return {
        "id": link.pk,
        "key": link.key,
        "short_url": f"{settings.PUBLIC_BASE_URL}/l/{link.key}",
        "destination": link.destination,
        "post_id": link.post_id,
        "campaign": None if campaign is None else campaign.campaign.slug,
        **{name: optional(getattr(link, name)) for name in UTM_FIELDS},
        "tags": sorted(tag.name for tag in link.tags.all()),
        "expires_at": None if link.expires_at is None else iso_utc(link.expires_at),
        "fallback_url": optional(link.fallback_url),
        "archived": link.archived_at is not None,
        "created_at": iso_utc(link.created_at),
        "updated_at": iso_utc(link.updated_at),
    }


def _create_options(request, data: dict) -> dict:
    """`campaign_link_create`'s arguments from one parsed link."""
    workspace = request.auth.workspace
    post = None
    if data.get("post_id") is not None:
        post = Post.objects.filter(workspace=workspace, pk=data["post_id"]).first()
        if post is None:
            raise Unprocessable("unknown post")
    campaign = None
    if data.get("campaign") is not None:
        campaign = Campaign.objects.filter(workspace=workspace, slug=data["campaign"]).first()
        if campaign is None:
            raise Unprocessable(f"unknown campaign: {data['campaign']}")
    return {
        "destination": data["destination"],
        "campaign": campaign,
        "post": post,
        "post_title": data.get("post_title") or None,
        "key": data.get("key"),
        "utm": {name: data[name] for name in UTM_FIELDS if name in data},
        "tags": data.get("tags", ()),
        "expires_at": data.get("expires_at"),
        "fallback_url": data.get("fallback_url", ""),
    }


def _links(request) -> QuerySet:
    """The token's workspace's links; deleted ones are gone from the API (their numbers stay in the analytics)."""
    return (
        Link.objects.filter(workspace_id=request.auth.workspace_id, deleted_at__isnull=True)
        .select_related("post__campaign_post__campaign")
        .prefetch_related("tags")
    )


def _link(request, pk: str) -> Link:
    link_id = as_id(pk)
    link = None if link_id is None else _links(request).filter(pk=link_id).first()
    if link is None:  # another workspace's, or a deleted one, is as unknown as a missing one
        raise NotFound(UNKNOWN)
    return link


def _idempotent(request, make) -> Response:
    key = idempotency_key_check(request.META.get("HTTP_IDEMPOTENCY_KEY"))
    answer = idempotent_answer(
        workspace=request.auth.workspace,
        key=key,
        # The path in the digest: a key sent to another operation with the same body is a reuse, not a replay.
        digest=request_digest({"path": request.path, "body": request.data}) if key else "",
        answer=lambda: Answer(status=201, body=make()),
        test=request.auth.is_test,
    )
    return Response(
        answer.body, status=answer.status, headers={"Idempotent-Replayed": "true"} if answer.replayed else None
    )


class LinkViewSet(viewsets.ViewSet):
    required_scopes = {
        **dict.fromkeys(("list", "retrieve"), "links:read"),
        **dict.fromkeys(("create", "bulk", "partial_update", "destroy"), "links:write"),
    }
    schema = PagedAutoSchema()
    lookup_value_regex = "[^/]+"

    @extend_schema(**openapi.LINK_LIST)
    @rate_limit(*READ_LIMITS)
    def list(self, request) -> Response:
        params = request.query_params
        links = _links(request)
        if (post_id := query_int(params, "post_id")) is not None:
            links = links.filter(post_id=post_id)
        if (slug := params.get("campaign")) is not None:
            links = links.filter(post__campaign_post__campaign__slug=slug)
        if (tag := params.get("tag")) is not None:
            links = links.filter(tags__name__iexact=tag)
        if search := params.get("search"):
            links = links.filter(Q(destination__icontains=search) | Q(key__icontains=search))
        archived = params.get("archived", "false")
        if archived not in ("true", "false"):
            raise Unprocessable("archived must be true or false")
        links = links.filter(archived_at__isnull=archived == "false")
        limit, after = page_position(params)
        if after is not None:
            links = links.filter(Q(created_at__lt=after[0]) | Q(created_at=after[0], pk__lt=after[1]))
        page = list(links.order_by("-created_at", "-pk")[: limit + 1])
        return Response(page_out(page, limit, link_out, at=lambda link: link.created_at))

    @extend_schema(request=LinkInput, **openapi.LINK_CREATE)
    @rate_limit(*WRITE_LIMITS)
    def create(self, request) -> Response:
        data = parse(LinkInput, request_json(request))
        options = _create_options(request, data)
        return _idempotent(request, lambda: link_out(campaign_link_create(workspace=request.auth.workspace, **options)))

    @extend_schema(request=BulkInput, **openapi.LINK_BULK)
    @action(detail=False, methods=["post"])
    @rate_limit(*WRITE_LIMITS)
    def bulk(self, request) -> Response:
        items = request_json(request).get("links")
        if not isinstance(items, list) or not 1 <= len(items) <= BULK_MAX:
            raise Unprocessable(f"links must be a list of 1 to {BULK_MAX} links")
        options = []
        for index, item in enumerate(items):
            try:
                if not isinstance(item, dict):
                    raise Unprocessable("a link must be an object")
                options.append(_create_options(request, parse(LinkInput, item)))
            except Unprocessable as exc:
                raise Unprocessable(f"links[{index}]: {exc.message}") from None

        def make() -> dict:
            made = campaign_links_create(workspace=request.auth.workspace, links=options)
            return {"data": [link_out(link) for link in made]}

        return _idempotent(request, make)

    @extend_schema(**openapi.LINK_RETRIEVE)
    @rate_limit(*READ_LIMITS)
    def retrieve(self, request, pk: str) -> Response:
        link = _link(request, pk)
        return Response({**link_out(link), "numbers": link_numbers(link_id=link.pk)})

    @extend_schema(request=LinkChangeInput, **openapi.LINK_UPDATE)
    @rate_limit(*WRITE_LIMITS)
    def partial_update(self, request, pk: str) -> Response:
        data = parse(LinkChangeInput, request_json(request))
        link, who = _link(request, pk), {"token": request.auth}
        archived = data.pop("archived", None)
        with transaction.atomic():  # the change and the archiving together, or neither
            if data:
                link = link_update(link=link, changes=data, **who)
            if archived is not None:
                link = link_archive(link=link, archived=archived, **who)
        return Response(link_out(_link(request, pk)))

    @extend_schema(**openapi.LINK_DELETE)
    @rate_limit(*WRITE_LIMITS)
    def destroy(self, request, pk: str) -> Response:
        link_delete(link=_link(request, pk), token=request.auth)
        return Response(status=204)
