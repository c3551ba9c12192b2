"""GET /api/v1/analytics: clicks, leads, sales and revenue per currency over a range of UTC days (docs/api.md)."""

from datetime import date, timedelta

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers, viewsets
from rest_framework.response import Response

from campaigns.models import Campaign
from clicks.models import Link, Post
from conversions.customers_openapi import RevenueOut
from lftrack.errors import Forbidden, NotFound, Unprocessable
from lftrack.openapi import PagedAutoSchema, error_responses
from lftrack.pagination import query_int
from lftrack.ratelimit import READ_LIMITS, rate_limit
from rollups.selectors import GROUPS, daily_numbers

DEFAULT_DAYS = 30
MAX_DAYS = 366
GROUPS_MAX = 1000
GROUPS_DEFAULT = 100
ANALYTICS_ERRORS = [
    "since must be a date (YYYY-MM-DD)",
    "until must be a date (YYYY-MM-DD)",
    "since is after until",
    f"the range is longer than {MAX_DAYS} days",
    "group_by must be day, link, post or campaign",
    f"limit must be 1 to {GROUPS_MAX}",
    "link_id must be an integer",
    "post_id must be an integer",
]
# The totals count live data only, and test data read live would cost the shared database as much as a tenant's
# test traffic grows: test tokens are refused (docs/api.md, "Test mode").
TEST_TOKEN_REFUSED = "test tokens cannot read analytics"


class NumbersOut(serializers.Serializer):
    clicks = serializers.IntegerField(help_text="People's clicks; bots and link previews left out.")
    leads = serializers.IntegerField()
    sales = serializers.IntegerField(help_text="In every currency together.")
    revenue = RevenueOut(many=True, help_text="Per currency, sorted by it; never added across currencies.")


@extend_schema_serializer(component_name="AnalyticsGroup")
class GroupOut(NumbersOut):
    """One of `day`, `link_id`, `post_id` or `campaign` says which group, as `group_by` asked."""

    day = serializers.DateField(required=False)
    link_id = serializers.IntegerField(required=False)
    post_id = serializers.IntegerField(required=False)
    campaign = serializers.CharField(required=False, allow_null=True, help_text="The slug; null: posts in no campaign.")


@extend_schema_serializer(component_name="Analytics")
class AnalyticsOut(serializers.Serializer):
    since = serializers.DateField()
    until = serializers.DateField()
    group_by = serializers.ChoiceField(choices=GROUPS)
    total = NumbersOut(help_text="The whole range, all groups together (also those past `limit`).")
    data = GroupOut(
        many=True,
        help_text="`day`: every day of the range, oldest first. Otherwise the groups with "
        "any numbers, most clicks first, at most `limit`.",
    )


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

    @extend_schema(
        operation_id="analytics",
        summary="Clicks, leads, sales and revenue over a range of days",
        description="The workspace's numbers over the UTC days `since` to `until` (both included; by default the "
        f"last {DEFAULT_DAYS} days, today included; at most {MAX_DAYS} days), per day, link, post or campaign, exact "
        "at the moment of the request. Revenue is per currency, gross, refunded and net; a sale counts on the day it "
        "occurred (a backfill on its own day) and its refunds on the same day. Bot clicks and test-mode data are "
        "never counted; a test token is refused (403). Limits: 600 requests a minute per token and per client "
        "address.",
        tags=["analytics"],
        parameters=[
            OpenApiParameter(
                "since",
                OpenApiTypes.DATE,
                description=f"First UTC day; by default {DEFAULT_DAYS - 1} days before `until`.",
            ),
            OpenApiParameter("until", OpenApiTypes.DATE, description="Last UTC day, included; by default today."),
            OpenApiParameter("group_by", str, enum=list(GROUPS), description="`day` by default."),
            OpenApiParameter("link_id", int, description="Only this link."),
            OpenApiParameter("post_id", int, description="Only this post's links."),
            OpenApiParameter("campaign", str, description="Only the links of this campaign's posts (its slug)."),
            OpenApiParameter(
                "limit",
                int,
                description=f"Groups other than days: the first 1 to {GROUPS_MAX}; {GROUPS_DEFAULT} by default.",
            ),
        ],
        responses={
            200: OpenApiResponse(AnalyticsOut, description="The numbers."),
            **error_responses(
                400,
                401,
                403,
                404,
                422,
                429,
                500,
                503,
                e403=["forbidden", TEST_TOKEN_REFUSED],
                e404=["unknown link", "unknown post", "unknown campaign"],
                e422=ANALYTICS_ERRORS,
            ),
        },
        examples=[
            OpenApiExample(
                "Per day",
                response_only=True,
                status_codes=[200],
                value={
                    "since": "2026-11-23",
                    "until": "2026-11-24",
                    "group_by": "day",
                    "total": {
                        "clicks": 140,
                        "leads": 12,
                        "sales": 3,
                        "revenue": [
                            {
                                "currency": "EUR",
                                "sales": 2,
                                "gross_cents": 98000,
                                "refunded_cents": 4900,
                                "net_cents": 93100,
                            },
                            {
                                "currency": "JPY",
                                "sales": 1,
                                "gross_cents": 5000,
                                "refunded_cents": 0,
                                "net_cents": 5000,
                            },
                        ],
                    },
                    "data": [
                        {
                            "day": "2026-11-23",
                            "clicks": 60,
                            "leads": 5,
                            "sales": 1,
                            "revenue": [
                                {
                                    "currency": "EUR",
                                    "sales": 1,
                                    "gross_cents": 49000,
                                    "refunded_cents": 4900,
                                    "net_cents": 44100,
                                }
                            ],
                        },
                        {
                            "day": "2026-11-24",
                            "clicks": 80,
                            "leads": 7,
                            "sales": 2,
                            "revenue": [
                                {
                                    "currency": "EUR",
                                    "sales": 1,
                                    "gross_cents": 49000,
                                    "refunded_cents": 0,
                                    "net_cents": 49000,
                                },
                                {
                                    "currency": "JPY",
                                    "sales": 1,
                                    "gross_cents": 5000,
                                    "refunded_cents": 0,
                                    "net_cents": 5000,
                                },
                            ],
                        },
                    ],
                },
            ),
        ],
    )
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
            raise Unprocessable("group_by must be day, link, post or campaign")
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
    """Each group's key as the answer names it: the day, the link or post id, the campaign's slug."""
    if group_by == "day":
        return {key: {"day": key.isoformat()} for key in keys}
    if group_by == "campaign":
        slugs = dict(Campaign.objects.filter(pk__in=[key for key in keys if key is not None]).values_list("pk", "slug"))
        return {key: {"campaign": slugs.get(key)} for key in keys}
    return {key: {f"{group_by}_id": key} for key in keys}
