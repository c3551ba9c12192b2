"""The dashboard, the back office's home: a workspace's numbers per day over a range against the range before,
filtered by post, link or campaign from the URL, top posts and links, click kinds, revenue per currency."""

from collections import Counter
from datetime import UTC, date, datetime, timedelta

import pytest
import time_machine

from clicks.models import Click
from conversions.models import ConversionEvent
from rollups.services import numbers_roll_up
from tests.backoffice.conftest import client_for
from tests.factories import (
    CampaignFactory,
    ClickFactory,
    ConversionEventFactory,
    LinkFactory,
    MembershipFactory,
    PostFactory,
    UserFactory,
)
from workspaces.models import Membership

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 20, 15, 0, tzinfo=UTC)
TODAY = NOW.date()


@pytest.fixture(autouse=True)
def frozen():
    with time_machine.travel(NOW, tick=False):
        yield


def click_on(link, day: date, *, device="mobile", browser="Mobile Safari", referrer="t.co") -> Click:
    made = ClickFactory(link=link, device=device, browser=browser, referrer_domain=referrer)
    Click.objects.filter(pk=made.pk).update(
        created_at=datetime.combine(day, datetime.min.time(), UTC) + timedelta(hours=10)
    )
    return made


def convert(click, day: date, event="lead", value=None, currency="USD"):
    return ConversionEventFactory(
        click=click,
        event=event,
        value_cents=value,
        currency=currency,
        occurred_at=datetime.combine(day, datetime.min.time(), UTC) + timedelta(hours=11),
    )


@pytest.fixture
def story(acme, globex):
    """Acme: a spring post (in the Spring campaign) with two links, an autumn post with one; 20 days of traffic.
    Globex: its own traffic, which acme's people never see."""
    spring = CampaignFactory(workspace=acme, name="Spring")
    spring_post = PostFactory(workspace=acme, title="Spring post", campaign=spring)
    autumn_post = PostFactory(workspace=acme, title="Autumn post")
    a, b = LinkFactory(post=spring_post), LinkFactory(post=spring_post)
    c = LinkFactory(post=autumn_post)
    for age in range(20):
        day = TODAY - timedelta(days=age)
        for n in range(age % 4 + 1):
            click = click_on([a, b, c][n % 3], day, device=["mobile", "desktop"][n % 2], referrer=["t.co", ""][age % 2])
            if n % 2 == 0:
                convert(click, day)
            if n == 3:
                convert(click, day, event="sale", value=1000 + age, currency="EUR" if age % 5 == 0 else "USD")
    numbers_roll_up(wait_seconds=1)  # most of it rolled up; what follows is the live tail
    convert(click_on(a, TODAY), TODAY, event="sale", value=4900)
    globex_link = LinkFactory(post__workspace=globex)
    convert(click_on(globex_link, TODAY), TODAY, event="sale", value=777_00)
    return {"spring": spring, "spring_post": spring_post, "autumn_post": autumn_post, "links": (a, b, c)}


def plain(workspace, since: date, until: date, links=None) -> dict:
    """Counted in Python over the rows: totals, per day, net per currency."""
    per_day = {day: Counter() for day in (since + timedelta(days=n) for n in range((until - since).days + 1))}
    money = Counter()
    for click in Click.objects.filter(workspace=workspace, is_bot=False):
        day = click.created_at.date()
        if day in per_day and (links is None or click.link_id in links):
            per_day[day]["clicks"] += 1
    for event in ConversionEvent.objects.filter(workspace=workspace, is_test=False):
        day = event.occurred_at.date()
        if day in per_day and (links is None or event.link_id in links):
            per_day[day][event.event + "s"] += 1
            if event.event == "sale":
                money[event.currency] += event.value_cents
    totals = Counter()
    for counts in per_day.values():
        totals.update(counts)
    return {"totals": totals, "per_day": per_day, "money": money}


def cards(response) -> dict:
    assert response.status_code == 200
    return {card["name"]: card for card in response.context["cards"]}


def test_totals_chart_and_change_for_a_range(as_bob, acme, story):
    response = as_bob.get("/admin/", {"range": "7"})
    since = TODAY - timedelta(days=6)
    now, before = plain(acme, since, TODAY), plain(acme, since - timedelta(days=7), since - timedelta(days=1))
    shown = cards(response)
    for name in ("clicks", "leads", "sales"):
        assert shown[name.capitalize()]["value"] == f"{now['totals'][name]:,}"
    change = round((now["totals"]["clicks"] - before["totals"]["clicks"]) * 100 / before["totals"]["clicks"])
    assert shown["Clicks"]["change"]["text"] == f"{change:+d}%"
    chart = response.context["chart"]
    assert chart["labels"] == [(since + timedelta(days=n)).isoformat() for n in range(7)]
    for name in ("clicks", "leads", "sales"):
        assert chart[name] == [now["per_day"][since + timedelta(days=n)][name] for n in range(7)]
    assert "777.00" not in response.content.decode()  # globex's sale


def test_a_filter_kept_in_the_url_narrows_every_number(as_bob, acme, story):
    a, b, c = story["links"]
    since = TODAY - timedelta(days=29)
    for params, links in (
        ({"post": story["autumn_post"].pk}, {c.pk}),
        ({"link": a.pk}, {a.pk}),
        ({"campaign": story["spring"].pk}, {a.pk, b.pk}),
    ):
        response = as_bob.get("/admin/", {"range": "30", **params})
        expected = plain(acme, since, TODAY, links=links)
        assert cards(response)["Leads"]["value"] == f"{expected['totals']['leads']:,}", params
        assert response.context["chart"]["clicks"] == [
            expected["per_day"][since + timedelta(days=n)]["clicks"] for n in range(30)
        ]
        # The view's own links keep the filter: another range, the same post, link or campaign.
        (_, _, url_7), *_ = response.context["ranges"]
        key, value = next(iter(params.items()))
        assert f"{key}={value}" in url_7


def test_a_custom_range(as_bob, acme, story):
    since, until = TODAY - timedelta(days=12), TODAY - timedelta(days=3)
    response = as_bob.get("/admin/", {"range": "custom", "since": since.isoformat(), "until": until.isoformat()})
    assert response.context["chart"]["labels"][0] == since.isoformat()
    assert len(response.context["chart"]["labels"]) == 10
    assert cards(response)["Clicks"]["value"] == f"{plain(acme, since, until)['totals']['clicks']:,}"


def test_revenue_per_currency_never_added_together(as_bob, acme, story):
    response = as_bob.get("/admin/", {"range": "30"})
    expected = plain(acme, TODAY - timedelta(days=29), TODAY)["money"]
    rows = {row["currency"]: row for row in response.context["revenue"]}
    assert set(rows) == {"EUR", "USD"}
    assert rows["USD"]["net"] == f"{expected['USD'] / 100:,.2f} USD"
    assert rows["EUR"]["net"] == f"{expected['EUR'] / 100:,.2f} EUR"
    assert response.context["chart"]["currency"] == "USD"  # the bigger one; EUR on request
    assert as_bob.get("/admin/", {"range": "30", "currency": "eur"}).context["chart"]["currency"] == "EUR"


def test_top_posts_links_and_where_clicks_came_from(as_bob, acme, story):
    response = as_bob.get("/admin/", {"range": "30"})
    posts = [row["name"] for row in response.context["top_posts"]]
    assert posts == ["Spring post", "Autumn post"]  # most leads first
    assert len(response.context["top_links"]) == 3
    kinds = dict(response.context["kinds"])
    devices = {entry["value"]: entry["clicks"] for entry in kinds["Device"]}
    clicks = Click.objects.filter(workspace=acme, created_at__date__gte=TODAY - timedelta(days=29))
    assert devices == dict(Counter(clicks.values_list("device", flat=True)))
    referrers = {entry["value"] for entry in kinds["Referrer"]}
    assert referrers == {"t.co", "none (direct, an app or a private link)"}


@pytest.mark.parametrize(
    "params",
    [
        {"range": "custom", "since": "2026-13-01", "until": "x"},
        {"range": "custom", "since": "2030-01-01", "until": "2030-01-02"},
        {"range": "custom", "since": "2020-01-01", "until": "2026-11-20"},
        {"range": "999"},
        {"post": "abc"},
        {"workspace": "9" * 30},
        {"currency": "<script>"},
    ],
)
def test_strange_parameters_show_the_default_view(as_bob, story, params):
    response = as_bob.get("/admin/", params)
    assert response.status_code == 200
    assert len(response.context["chart"]["labels"]) == 30


def test_another_workspaces_post_is_ignored_and_said(as_bob, globex, story):
    foreign = PostFactory(workspace=globex)
    response = as_bob.get("/admin/", {"post": foreign.pk})
    assert response.context["choice"].post is None
    assert "That post is not in Acme" in response.content.decode()


def test_each_person_sees_their_own_workspace_and_switches_between_theirs(as_charlie, acme, globex, story):
    response = as_charlie.get("/admin/", {"workspace": acme.pk})  # not theirs: their own instead
    assert response.context["choice"].workspace == globex
    assert "777.00 USD" in response.content.decode() and "Spring post" not in response.content.decode()
    assert 'id="workspace-switch"' not in response.content.decode()

    both = UserFactory(username="dana")
    MembershipFactory(user=both, workspace=acme, role=Membership.Role.EDITOR)
    MembershipFactory(user=both, workspace=globex, role=Membership.Role.EDITOR)
    dana = client_for(both)
    page = dana.get("/admin/", {"workspace": globex.pk})
    assert page.context["choice"].workspace == globex and 'id="workspace-switch"' in page.content.decode()
    assert dana.get("/admin/", {"workspace": acme.pk}).context["choice"].workspace == acme


def test_staff_without_a_workspace_get_the_plain_index(acme):
    response = client_for(UserFactory(username="stranger")).get("/admin/")
    assert response.status_code == 200 and "cards" not in response.context


@pytest.mark.parametrize("days", ["7", "90"])
def test_the_number_of_queries_does_not_grow_with_the_range(as_bob, story, days, django_assert_max_num_queries):
    as_bob.get("/admin/")
    # Session, user, roles, workspaces, permissions (2), the pickers (2), then the numbers: 4 watermark reads
    # and 4 statements (the breakdown by country among them), the links' posts, the top links' and posts' names.
    with django_assert_max_num_queries(19):
        assert as_bob.get("/admin/", {"range": days}).status_code == 200
