"""GET /api/v1/analytics: the wiring of daily_numbers (tests/rollups/test_daily_numbers.py checks the numbers)."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.test import override_settings

from rollups.services import numbers_roll_up
from tests.conftest import assert_api_error
from tests.factories import (
    CampaignFactory,
    ClickFactory,
    ConversionEventFactory,
    LinkFactory,
    PostFactory,
    RefundFactory,
)
from workspaces.tokens import api_token_create

pytestmark = pytest.mark.django_db

URL = "/api/v1/analytics"
NOW = datetime(2026, 11, 24, 15, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def now():
    with time_machine.travel(NOW, tick=False):
        yield


@pytest.fixture
def shop(acme, globex):
    spring = CampaignFactory(workspace=acme, slug="spring")
    launch = PostFactory(workspace=acme, campaign=spring)
    link, other = LinkFactory(post=launch), LinkFactory(post__workspace=acme)
    click = ClickFactory(link=link)
    ClickFactory(link=other)
    ClickFactory(link=other, is_bot=True)
    ConversionEventFactory(click=click, event="lead")
    sale = ConversionEventFactory(
        click=click, event="sale", value_cents=49000, currency="EUR", occurred_at=NOW - timedelta(days=1)
    )
    RefundFactory(conversion=sale, amount_cents=4900)
    ConversionEventFactory(click=click, event="sale", value_cents=5000, currency="JPY")
    ConversionEventFactory(click=click, event="sale", value_cents=777, currency="USD", is_test=True)
    theirs = LinkFactory(post__workspace=globex)
    ConversionEventFactory(click=ClickFactory(link=theirs), event="sale", value_cents=999999)
    return {"campaign": spring, "post": launch, "link": link, "other": other, "theirs": theirs}


EUR = {"currency": "EUR", "sales": 1, "gross_cents": 49000, "refunded_cents": 4900, "net_cents": 44100}
JPY = {"currency": "JPY", "sales": 1, "gross_cents": 5000, "refunded_cents": 0, "net_cents": 5000}


def test_the_last_30_days_per_day_by_default(api, acme_token, shop):
    numbers_roll_up()  # partly rolled up, partly live: the same answer
    ClickFactory(link=shop["link"])
    resp = api.get(URL, token=acme_token)
    assert resp.status_code == 200
    body = resp.json()
    assert (body["since"], body["until"], body["group_by"]) == ("2026-10-26", "2026-11-24", "day")
    assert body["total"] == {"clicks": 3, "leads": 1, "sales": 2, "revenue": [EUR, JPY]}
    assert len(body["data"]) == 30 and body["data"][0] == {
        "day": "2026-10-26",
        "clicks": 0,
        "leads": 0,
        "sales": 0,
        "revenue": [],
    }
    assert body["data"][-2:] == [
        {"day": "2026-11-23", "clicks": 0, "leads": 0, "sales": 1, "revenue": [EUR]},
        {"day": "2026-11-24", "clicks": 3, "leads": 1, "sales": 1, "revenue": [JPY]},
    ]


def test_grouped_by_link_post_and_campaign(api, acme_token, shop):
    by_link = api.get(URL, {"group_by": "link", "since": "2026-11-01"}, token=acme_token).json()["data"]
    assert by_link == [
        {"link_id": shop["link"].pk, "clicks": 1, "leads": 1, "sales": 2, "revenue": [EUR, JPY]},
        {"link_id": shop["other"].pk, "clicks": 1, "leads": 0, "sales": 0, "revenue": []},
    ]
    by_post = api.get(URL, {"group_by": "post", "limit": "1"}, token=acme_token).json()
    assert [group["post_id"] for group in by_post["data"]] == [shop["post"].pk]  # the first of two
    assert by_post["total"]["clicks"] == 2  # all groups
    by_campaign = api.get(URL, {"group_by": "campaign"}, token=acme_token).json()["data"]
    assert [(group["campaign"], group["clicks"]) for group in by_campaign] == [("spring", 1), (None, 1)]


def test_narrowed_to_a_link_a_post_or_a_campaign(api, acme_token, shop):
    for params in ({"link_id": shop["link"].pk}, {"post_id": shop["post"].pk}, {"campaign": "spring"}):
        total = api.get(URL, params, token=acme_token).json()["total"]
        assert total == {"clicks": 1, "leads": 1, "sales": 2, "revenue": [EUR, JPY]}, params


def test_another_workspaces_link_post_and_campaign_are_unknown(api, acme_token, globex_token, shop, globex):
    theirs = shop["theirs"]
    assert_api_error(api.get(URL, {"link_id": theirs.pk}, token=acme_token), 404, "unknown link")
    assert_api_error(api.get(URL, {"post_id": theirs.post_id}, token=acme_token), 404, "unknown post")
    CampaignFactory(workspace=globex, slug="autumn")
    assert_api_error(api.get(URL, {"campaign": "autumn"}, token=acme_token), 404, "unknown campaign")
    assert_api_error(api.get(URL, {"link_id": shop["link"].pk}, token=globex_token), 404, "unknown link")
    theirs_only = api.get(URL, token=globex_token).json()["total"]
    assert theirs_only == {
        "clicks": 1,
        "leads": 0,
        "sales": 1,
        "revenue": [{"currency": "USD", "sales": 1, "gross_cents": 999999, "refunded_cents": 0, "net_cents": 999999}],
    }


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"since": "2026-11-31"}, "since must be a date (YYYY-MM-DD)"),
        ({"since": "2026-11-01T00:00:00Z"}, "since must be a date (YYYY-MM-DD)"),
        ({"until": "yesterday"}, "until must be a date (YYYY-MM-DD)"),
        ({"since": "2026-11-20", "until": "2026-11-19"}, "since is after until"),
        ({"since": "2025-11-23", "until": "2026-11-24"}, "the range is longer than 366 days"),
        (
            {"group_by": "week"},
            "group_by must be one of day, link, post, campaign, country, utm_source, utm_medium, utm_campaign, tag",
        ),
        ({"limit": "0"}, "limit must be 1 to 1000"),
        ({"limit": "²"}, "limit must be 1 to 1000"),
        ({"link_id": "x"}, "link_id must be an integer"),
        ({"post_id": "9" * 5000}, "post_id must be an integer"),
    ],
)
def test_bad_parameters_are_422(api, acme_token, params, message):
    assert_api_error(api.get(URL, params, token=acme_token), 422, message)


def test_a_whole_year_is_the_longest_range(api, acme_token, shop):
    body = api.get(URL, {"since": "2025-11-24", "until": "2026-11-24"}, token=acme_token).json()
    assert len(body["data"]) == 366


def test_needs_a_token_allowed_to_read(api, acme, shop):
    assert_api_error(api.get(URL), 401, "unauthorized")
    writer = api_token_create(workspace=acme, name="w", scopes=["conversions:write"]).secret
    assert_api_error(api.get(URL, token=writer), 403, "forbidden")
    reader = api_token_create(workspace=acme, name="r", scopes=["read"]).secret
    assert api.get(URL, token=reader).status_code == 200


def test_reads_have_their_own_limit(api, acme_token):
    with override_settings(RATELIMIT_READ_TOKEN="2/m"):
        assert [api.get(URL, token=acme_token).status_code for _ in range(3)] == [200, 200, 429]
