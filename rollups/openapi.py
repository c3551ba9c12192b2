"""OpenAPI description of GET /api/v1/analytics (rollups/api.py): the answer's shape (the view builds it by hand),
the operation's text, example and errors, and the bounds and messages both the view and the schema name."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema_serializer
from rest_framework import serializers

from conversions.customers_openapi import RevenueOut
from lftrack.openapi import error_responses
from rollups.selectors import GROUPS

DEFAULT_DAYS = 30
MAX_DAYS = 366
GROUPS_MAX = 1000
GROUPS_DEFAULT = 100
GROUP_BY_INVALID = f"group_by must be one of {', '.join(GROUPS)}"
ANALYTICS_ERRORS = [
    "since must be a date (YYYY-MM-DD)",
    "until must be a date (YYYY-MM-DD)",
    "since is after until",
    f"the range is longer than {MAX_DAYS} days",
    GROUP_BY_INVALID,
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
    """One of `day`, `link_id`, `post_id`, `campaign`, `country`, `utm_source`, `utm_medium`, `utm_campaign` or
    `tag` says which group, as `group_by` asked."""

    day = serializers.DateField(required=False)
    link_id = serializers.IntegerField(required=False)
    post_id = serializers.IntegerField(required=False)
    campaign = serializers.CharField(required=False, allow_null=True, help_text="The slug; null: posts in no campaign.")
    country = serializers.CharField(
        required=False,
        allow_null=True,
        help_text="ISO 3166 alpha-2 code of the click's country (of a conversion's click); null: not known.",
    )
    utm_source = serializers.CharField(
        required=False, allow_null=True, help_text="The click's link's `utm_source` when clicked; null: none."
    )
    utm_medium = serializers.CharField(required=False, allow_null=True, help_text="As `utm_source`.")
    utm_campaign = serializers.CharField(required=False, allow_null=True, help_text="As `utm_source`.")
    tag = serializers.CharField(
        required=False,
        allow_null=True,
        help_text="A tag of the link, as the link has it now (a link counts under each of its tags); null: links "
        "without tags.",
    )


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


ANALYTICS = {
    "operation_id": "analytics",
    "summary": "Clicks, leads, sales and revenue over a range of days",
    "description": "The workspace's numbers over the UTC days `since` to `until` (both included; by default the "
    f"last {DEFAULT_DAYS} days, today included; at most {MAX_DAYS} days), per day, link, post, campaign, "
    "country, UTM source, medium or campaign, or tag, exact at the moment of the request. Country and UTM fields "
    "are the click's (a conversion's and a refund's: their click's), as stored when it was recorded; a tag is "
    "the link's as it is now, and `total` counts a link of several tags once. Revenue is per currency, gross, refunded and net; a sale counts on the day it "
    "occurred (a backfill on its own day) and its refunds on the same day. Bot clicks and test-mode data are "
    "never counted; a test token is refused (403). Limits: 600 requests a minute per token and per client "
    "address.",
    "tags": ["analytics"],
    "parameters": [
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
    "responses": {
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
    "examples": [
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
}
