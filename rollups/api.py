"""GET /api/v1/analytics: clicks, leads, sales and revenue per currency over a range of UTC days (docs/api.md;
described in rollups/openapi.py)."""

from datetime import date, timedelta

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.response import Response

from campaigns.models import Campaign
from clicks.models import Link, Post, Tag
from lftrack.errors import Forbidden, NotFound, Unprocessable
from lftrack.openapi import PagedAutoSchema
from lftrack.pagination import query_int
from lftrack.ratelimit import READ_LIMITS, rate_limit
from rollups import openapi
from rollups.openapi import (
    DEFAULT_DAYS,
    GROUP_BY_INVALID,
    GROUPS_DEFAULT,
    GROUPS_MAX,
    MAX_DAYS,
    TEST_TOKEN_REFUSED,
)
from rollups.selectors import BREAKDOWNS, GROUPS, daily_numbers


def query_date(params, name: str) -> date | None:
    raw = params.get(name)
    if raw is None:
        return None
    try:
        if len(raw) != 10:
            raise ValueError
        return date.fromisoformat(raw)
    except ValueError:
        raise Unprocessable(f"{name} must be a date (YYYY-MM-DD)") from None


def _numbers_out(numbers: dict) -> dict:
    return {name: numbers[name] for name in ("clicks", "leads", "sales", "revenue")}


class AnalyticsViewSet(viewsets.ViewSet):
    required_scopes = {"list": "read"}  # workspaces/auth.py
    schema = PagedAutoSchema()

    @extend_schema(**openapi.ANALYTICS)
    @rate_limit(*READ_LIMITS)
    def list(self, request) -> Response:
        if request.auth.is_test:
            raise Forbidden(TEST_TOKEN_REFUSED)
        params = request.query_params
        workspace_id = request.auth.workspace_id
        until = query_date(params, "until") or timezone.now().date()
        since = query_date(params, "since") or until - timedelta(days=DEFAULT_DAYS - 1)
        if since > until:
            raise Unprocessable("since is after until")
        if (until - since).days >= MAX_DAYS:
            raise Unprocessable(f"the range is longer than {MAX_DAYS} days")
        group_by = params.get("group_by", "day")
        if group_by not in GROUPS:
            raise Unprocessable(GROUP_BY_INVALID)
        raw = params.get("limit", str(GROUPS_DEFAULT))
        if not (raw.isascii() and raw.isdigit() and len(raw) <= 4 and 1 <= int(raw) <= GROUPS_MAX):
            raise Unprocessable(f"limit must be 1 to {GROUPS_MAX}")
        limit = int(raw)
        filters = _filters(params, workspace_id=workspace_id)
        numbers = daily_numbers(workspace_id=workspace_id, since=since, until=until, group_by=group_by, **filters)
        groups = numbers["groups"] if group_by == "day" else numbers["groups"][:limit]
        keys = _group_keys(group_by, [group["key"] for group in groups])
        return Response(
            {
                "since": since.isoformat(),
                "until": until.isoformat(),
                "group_by": group_by,
                "total": _numbers_out(numbers["total"]),
                "data": [{**keys[group["key"]], **_numbers_out(group)} for group in groups],
            }
        )


def _filters(params, *, workspace_id: int) -> dict:
    """The link, post and campaign to narrow to, as ids of this workspace: another workspace's is unknown (404)."""
    filters = {}
    for name, model, found in (("link_id", Link, "link_ids"), ("post_id", Post, "post_ids")):
        pk = query_int(params, name)
        if pk is not None:
            if not model.objects.filter(workspace_id=workspace_id, pk=pk).exists():
                raise NotFound(f"unknown {name.removesuffix('_id')}")
            filters[found] = [pk]
    slug = params.get("campaign")
    if slug is not None:
        campaign = Campaign.objects.filter(workspace_id=workspace_id, slug=slug).values_list("pk", flat=True).first()
        if campaign is None:
            raise NotFound("unknown campaign")
        filters["campaign_ids"] = [campaign]
    return filters


def _group_keys(group_by: str, keys: list) -> dict:
    """Each group's key as the answer names it: the day, the link or post id, the campaign's slug, the tag's name, the
    click's country or UTM field (null for '': none)."""
    if group_by == "day":
        return {key: {"day": key.isoformat()} for key in keys}
    if group_by in BREAKDOWNS:
        return {key: {group_by: key or None} for key in keys}
    if group_by == "tag":
        names = dict(Tag.objects.filter(pk__in=[key for key in keys if key is not None]).values_list("pk", "name"))
        return {key: {"tag": names.get(key)} for key in keys}
    if group_by == "campaign":
        slugs = dict(Campaign.objects.filter(pk__in=[key for key in keys if key is not None]).values_list("pk", "slug"))
        return {key: {"campaign": slugs.get(key)} for key in keys}
    return {key: {f"{group_by}_id": key} for key in keys}
