"""GET /api/v1/analytics by country, UTM source, medium and campaign, and tag: equal to plain queries over the clicks,
conversions and refunds, rolled up or not, after retention's purge, and never another workspace's."""

from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db.models import Count, Sum

from clicks.models import Click, Tag
from conversions.models import ConversionEvent, Refund
from rollups.retention import retention_purge
from rollups.selectors import BREAKDOWNS, daily_numbers
from rollups.services import numbers_rebuild, numbers_roll_up
from tests.conftest import assert_api_error
from tests.factories import ClickFactory, ConversionEventFactory, LinkFactory, RefundFactory
from workspaces.services import workspace_retention_set

pytestmark = pytest.mark.django_db

URL = "/api/v1/analytics"
NOW = datetime(2026, 11, 24, 15, 0, tzinfo=UTC)
DIMENSIONS = [*BREAKDOWNS, "tag"]


@pytest.fixture(autouse=True)
def now():
    with time_machine.travel(NOW, tick=False):
        yield


def traffic(workspace, *, seed: int) -> None:
    """Clicks from three countries and none, on links of different UTM fields and tags, with leads, sales in two
    currencies, refunds, a bot click and a test-mode sale (neither counted)."""
    news = Tag.objects.get_or_create(workspace=workspace, name="newsletter")[0]
    paid = Tag.objects.get_or_create(workspace=workspace, name="paid")[0]
    mail = LinkFactory(
        post__workspace=workspace, destination="https://shop.example.com/?utm_source=mail&utm_medium=email"
    )
    mail.tags.add(news, paid)
    social = LinkFactory(post__workspace=workspace)
    social.tags.add(paid)
    bare = LinkFactory(post__workspace=workspace)
    utm = {
        mail.pk: {"utm_source": "mail", "utm_medium": "email", "utm_campaign": "autumn"},
        social.pk: {"utm_source": "x.com", "utm_medium": "social", "utm_campaign": "autumn"},
        bare.pk: {},
    }
    countries = ["GB", "DE", "US", ""]
    for n in range(12 + seed):
        link = (mail, social, bare)[n % 3]
        click = ClickFactory(link=link, country=countries[(n + seed) % 4], **utm[link.pk])
        if n % 2 == 0:
            ConversionEventFactory(click=click, event="lead")
        if n % 3 == 1:
            sale = ConversionEventFactory(
                click=click, event="sale", value_cents=1000 * (n + 1), currency=("EUR", "USD")[n % 2]
            )
            if n % 4 == 1:
                RefundFactory(conversion=sale, amount_cents=300)
    ClickFactory(link=mail, country="FR", is_bot=True, **utm[mail.pk])
    test_click = ClickFactory(link=social, country="GB", **utm[social.pk])
    ConversionEventFactory(click=test_click, event="sale", value_cents=999, currency="EUR", is_test=True)


def plain(workspace, dimension: str, **narrow) -> dict:
    """The numbers per value of `dimension`, by plain queries over the rows (a tag: the link's; others: the click's),
    in the API's shape, keyed as the API names them."""
    via = {"click": "", "event": "click__", "refund": "conversion__click__"}
    if dimension == "tag":
        via = {"click": "link__", "event": "link__", "refund": "link__"}
    field = "tags__name" if dimension == "tag" else dimension
    groups: dict = defaultdict(lambda: {"clicks": 0, "leads": 0, "sales": 0, "money": {}})
    clicks = Click.objects.filter(workspace=workspace, is_bot=False, **narrow)
    for key, n in clicks.values_list(via["click"] + field).annotate(n=Count("id")):
        groups[key or None]["clicks"] += n
    events = ConversionEvent.objects.filter(workspace=workspace, is_test=False, **narrow)
    for key, n in events.filter(event="lead").values_list(via["event"] + field).annotate(n=Count("id")):
        groups[key or None]["leads"] += n
    sales = events.filter(event="sale").values_list(via["event"] + field, "currency")
    for key, currency, n, gross in sales.annotate(n=Count("id"), gross=Sum("value_cents")):
        groups[key or None]["sales"] += n
        money = groups[key or None]["money"].setdefault(currency, [0, 0, 0])
        money[0] += n
        money[1] += gross
    refunds = Refund.objects.filter(workspace=workspace, is_test=False, **narrow)
    for key, currency, amount in (
        refunds.values_list(via["refund"] + field, "currency").annotate(amount=Sum("amount_cents")).order_by()
    ):
        groups[key or None]["money"].setdefault(currency, [0, 0, 0])[2] += amount
    return {
        key: {
            "clicks": g["clicks"],
            "leads": g["leads"],
            "sales": g["sales"],
            "revenue": [
                {"currency": c, "sales": s, "gross_cents": gross, "refunded_cents": ref, "net_cents": gross - ref}
                for c, (s, gross, ref) in sorted(g["money"].items())
            ],
        }
        for key, g in groups.items()
    }


def answered(api, token, dimension: str, **params) -> dict:
    resp = api.get(URL, {"group_by": dimension, **params}, token=token)
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["group_by"] == dimension
    return {row.pop(dimension): row for row in body["data"]}


@pytest.mark.parametrize("dimension", DIMENSIONS)
def test_each_dimension_equals_plain_queries_rolled_up_or_not(api, acme, globex, acme_token, dimension):
    traffic(acme, seed=0)
    traffic(globex, seed=1)  # another workspace's, never in acme's numbers
    numbers_roll_up()
    traffic(acme, seed=2)  # the live tail, above the watermarks
    expected = plain(acme, dimension)
    assert answered(api, acme_token, dimension) == expected
    numbers_roll_up()
    assert answered(api, acme_token, dimension) == expected


@pytest.mark.parametrize("dimension", DIMENSIONS)
def test_narrowed_to_a_link_or_a_post_each_dimension_equals_plain_queries(api, acme, acme_token, dimension):
    traffic(acme, seed=0)
    numbers_roll_up()
    traffic(acme, seed=1)
    link = Click.objects.filter(workspace=acme, utm_source="mail").latest("id").link
    assert answered(api, acme_token, dimension, link_id=link.pk) == plain(acme, dimension, link=link)
    assert answered(api, acme_token, dimension, post_id=link.post_id) == plain(acme, dimension, link__post=link.post)


def test_country_and_utm_values_are_the_clicks_and_null_when_none(api, acme, acme_token):
    traffic(acme, seed=0)
    numbers_roll_up()
    assert set(answered(api, acme_token, "country")) == {"GB", "DE", "US", None}
    assert set(answered(api, acme_token, "utm_source")) == {"mail", "x.com", None}
    assert set(answered(api, acme_token, "utm_medium")) == {"email", "social", None}
    assert set(answered(api, acme_token, "tag")) == {"newsletter", "paid", None}


def test_a_link_of_two_tags_counts_under_each_and_once_in_the_total(api, acme, acme_token):
    traffic(acme, seed=0)
    body = api.get(URL, {"group_by": "tag"}, token=acme_token).json()
    clicks = Click.objects.filter(workspace=acme, is_bot=False).count()
    assert body["total"]["clicks"] == clicks
    assert sum(row["clicks"] for row in body["data"]) > clicks  # the newsletter-and-paid link's clicks twice
    by_day = api.get(URL, token=acme_token).json()["total"]
    assert body["total"] == by_day


@pytest.mark.parametrize("dimension", BREAKDOWNS)
def test_the_groups_of_a_dimension_add_up_to_the_total(api, acme, acme_token, dimension):
    traffic(acme, seed=3)
    numbers_roll_up()
    body = api.get(URL, {"group_by": dimension}, token=acme_token).json()
    assert sum(row["clicks"] for row in body["data"]) == body["total"]["clicks"]
    assert sum(row["sales"] for row in body["data"]) == body["total"]["sales"]


def test_another_workspace_sees_none_of_it(api, acme, globex, acme_token):
    traffic(globex, seed=0)
    for dimension in DIMENSIONS:
        body = api.get(URL, {"group_by": dimension}, token=acme_token).json()
        assert body["data"] == [] and body["total"]["clicks"] == 0


def test_an_unknown_group_is_refused(api, acme_token):
    assert_api_error(
        api.get(URL, {"group_by": "city"}, token=acme_token),
        422,
        "group_by must be one of day, link, post, campaign, country, utm_source, utm_medium, utm_campaign, tag",
    )


def test_limit_keeps_the_groups_with_most_clicks(api, acme, acme_token):
    traffic(acme, seed=0)
    data = api.get(URL, {"group_by": "country", "limit": "2"}, token=acme_token).json()["data"]
    everything = answered(api, acme_token, "country")
    assert [row["country"] for row in data] == sorted(everything, key=lambda k: -everything[k]["clicks"])[:2]


def test_a_change_of_the_link_leaves_its_earlier_clicks_utm(api, acme, acme_token):
    link = LinkFactory(post__workspace=acme)
    ClickFactory(link=link, utm_source="mail")
    numbers_roll_up()
    ClickFactory(link=link, utm_source="print")
    assert {k: v["clicks"] for k, v in answered(api, acme_token, "utm_source").items()} == {"mail": 1, "print": 1}


def test_the_numbers_stay_after_retention_purges_the_clicks(api, acme, acme_token):
    with time_machine.travel(NOW - timedelta(days=60), tick=False):
        traffic(acme, seed=1)
    numbers_roll_up()
    range_ = {"since": (NOW - timedelta(days=90)).date().isoformat()}
    before = {dimension: answered(api, acme_token, dimension, **range_) for dimension in DIMENSIONS}
    assert before["country"] == plain(acme, "country")
    workspace_retention_set(workspace=acme, days=30)
    result = retention_purge(now=NOW)
    assert result.clicks > 0 and not Click.objects.filter(workspace=acme, is_bot=False).exists()
    for dimension in DIMENSIONS:
        assert answered(api, acme_token, dimension, **range_) == before[dimension]


def test_a_rebuild_counts_the_breakdowns_again(acme):
    traffic(acme, seed=2)
    numbers_roll_up()
    since, until = NOW.date() - timedelta(days=1), NOW.date()
    before = daily_numbers(workspace_id=acme.pk, since=since, until=until, group_by="country")
    numbers_rebuild()
    assert daily_numbers(workspace_id=acme.pk, since=since, until=until, group_by="country") == before
