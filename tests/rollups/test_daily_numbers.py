"""daily_numbers: the numbers of any range of UTC days, per day, link, post or campaign, equal plain counts over
the rows before, between and after roll-ups, backdated events in their own day, money never across currencies."""

from collections import defaultdict
from datetime import UTC, date, datetime, timedelta

import pytest
import time_machine

from campaigns.models import CampaignPost
from clicks.models import Click
from conversions.models import ConversionEvent, Refund
from rollups.models import DailyTotals
from rollups.selectors import daily_numbers
from rollups.services import numbers_roll_up
from tests.factories import (
    CampaignFactory,
    ClickFactory,
    ConversionEventFactory,
    LinkFactory,
    PostFactory,
    RefundFactory,
)

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def at(days_ago: float, hour: int = 12) -> datetime:
    return (NOW - timedelta(days=days_ago)).replace(hour=hour)


def plain(workspace, since: date, until: date, group_by: str, links=None) -> dict:
    """{key: (clicks, leads, sales, {currency: (sales, gross, refunded, net)})} counted in Python over every row."""
    campaign_of = dict(CampaignPost.objects.values_list("post_id", "campaign_id"))

    def key(link, moment):
        return {"day": moment.date(), "link": link.pk, "post": link.post_id, "campaign": campaign_of.get(link.post_id)}[
            group_by
        ]

    def wanted(link, moment) -> bool:
        return since <= moment.astimezone(UTC).date() <= until and (links is None or link in links)

    counts = defaultdict(lambda: [0, 0, 0, defaultdict(lambda: [0, 0, 0])])
    for click in Click.objects.filter(workspace=workspace, is_bot=False).select_related("link"):
        if wanted(click.link, click.created_at):
            counts[key(click.link, click.created_at)][0] += 1
    for event in ConversionEvent.objects.filter(workspace=workspace, is_test=False).select_related("link"):
        if wanted(event.link, event.occurred_at):
            row = counts[key(event.link, event.occurred_at)]
            row[1 if event.event == "lead" else 2] += 1
            if event.event == "sale":
                row[3][event.currency][0] += 1
                row[3][event.currency][1] += event.value_cents or 0
    for refund in Refund.objects.filter(workspace=workspace, is_test=False).select_related("link", "conversion"):
        if wanted(refund.link, refund.conversion.occurred_at):
            counts[key(refund.link, refund.conversion.occurred_at)][3][refund.currency][2] += refund.amount_cents
    return {
        k: (c, leads, s, {cur: (n, g, r, g - r) for cur, (n, g, r) in money.items()})
        for k, (c, leads, s, money) in counts.items()
    }


def answered(result: dict) -> dict:
    return {
        group["key"]: (
            group["clicks"],
            group["leads"],
            group["sales"],
            {
                entry["currency"]: (entry["sales"], entry["gross_cents"], entry["refunded_cents"], entry["net_cents"])
                for entry in group["revenue"]
            },
        )
        for group in result["groups"]
        if group["clicks"] or group["leads"] or group["sales"] or group["revenue"]
    }


@pytest.fixture
def shop(acme, globex):
    spring = CampaignFactory(workspace=acme)
    launch, quiet = PostFactory(workspace=acme, campaign=spring), PostFactory(workspace=acme)
    links = [LinkFactory(post=launch), LinkFactory(post=launch), LinkFactory(post=quiet)]
    theirs = LinkFactory(post__workspace=globex)
    return spring, links, theirs


def traffic(links, theirs, round_: int) -> None:
    """Clicks over the last days (bots too), leads (test mode too), sales in three currencies, some backdated,
    partial refunds (test mode too), and as much again in another workspace."""
    with time_machine.travel(NOW, tick=False):
        for n, link in enumerate([*links, theirs]):
            for days_ago in range(n + round_, n + round_ + 4):
                with time_machine.travel(at(days_ago, hour=(n * 5 + days_ago) % 24), tick=False):
                    click = ClickFactory(link=link)
                    ClickFactory(link=link, is_bot=True)
                ConversionEventFactory(click=click, event="lead", occurred_at=click.created_at)
                ConversionEventFactory(click=click, event="lead", occurred_at=click.created_at, is_test=True)
                sale = ConversionEventFactory(
                    click=click,
                    event="sale",
                    value_cents=1000 * days_ago + n,
                    currency=("EUR", "JPY", "USD")[days_ago % 3],
                    occurred_at=click.created_at + timedelta(hours=30),  # a backfill: a later day than its click
                )
                RefundFactory(conversion=sale, amount_cents=10 + n)
                RefundFactory(conversion=ConversionEventFactory(click=click, event="sale", value_cents=5, is_test=True))


@pytest.mark.parametrize("group_by", ["day", "link", "post", "campaign"])
def test_daily_numbers_equal_plain_counts_before_between_and_after_roll_ups(acme, shop, group_by):
    _spring, links, theirs = shop
    since, until = (NOW - timedelta(days=6)).date(), (NOW - timedelta(days=1)).date()

    def check() -> None:
        result = daily_numbers(workspace_id=acme.pk, since=since, until=until, group_by=group_by)
        assert answered(result) == plain(acme, since, until, group_by)
        whole = plain(acme, since, until, "day")
        assert result["total"]["clicks"] == sum(row[0] for row in whole.values()) > 0
        if group_by == "day":
            assert [group["key"] for group in result["groups"]] == [since + timedelta(days=n) for n in range(6)]

    traffic(links, theirs, 0)
    check()  # nothing rolled up: all tail
    numbers_roll_up()
    assert DailyTotals.objects.exists()
    check()  # all in the daily totals
    traffic(links, theirs, 1)  # rows arriving between roll-ups, on days with and without totals
    check()
    numbers_roll_up()
    check()


def test_daily_numbers_narrow_to_links_posts_and_campaigns(acme, shop):
    spring, links, theirs = shop
    traffic(links, theirs, 0)
    numbers_roll_up()
    traffic(links, theirs, 2)
    since, until = (NOW - timedelta(days=9)).date(), NOW.date()
    by_link = daily_numbers(workspace_id=acme.pk, since=since, until=until, link_ids=[links[0].pk], group_by="link")
    assert answered(by_link) == plain(acme, since, until, "link", links=[links[0]])
    by_post = daily_numbers(workspace_id=acme.pk, since=since, until=until, post_ids=[links[2].post_id], group_by="day")
    assert answered(by_post) == plain(acme, since, until, "day", links=[links[2]])
    by_campaign = daily_numbers(
        workspace_id=acme.pk, since=since, until=until, campaign_ids=[spring.pk], group_by="post"
    )
    assert answered(by_campaign) == plain(acme, since, until, "post", links=links[:2])
    campaigns = answered(daily_numbers(workspace_id=acme.pk, since=since, until=until, group_by="campaign"))
    assert set(campaigns) == {spring.pk, None}  # None: links whose post is in no campaign


def test_another_workspaces_links_count_nothing(acme, shop):
    _spring, links, theirs = shop
    traffic(links, theirs, 0)
    since, until = (NOW - timedelta(days=9)).date(), NOW.date()
    for _ in range(2):
        mine = daily_numbers(workspace_id=acme.pk, since=since, until=until, link_ids=[theirs.pk], group_by="link")
        assert mine["groups"] == [] and mine["total"] == {"clicks": 0, "leads": 0, "sales": 0, "revenue": []}
        numbers_roll_up()


def test_a_backdated_sale_lands_in_its_own_day_after_a_roll_up(acme, shop):
    _, links, _ = shop
    with time_machine.travel(at(20), tick=False):
        click = ClickFactory(link=links[0])
    with time_machine.travel(NOW, tick=False):
        numbers_roll_up()
        ConversionEventFactory(click=click, event="sale", value_cents=4200, currency="KWD", occurred_at=at(10))
    day = at(10).date()
    for _ in range(2):  # in the tail, then in the daily totals
        result = daily_numbers(workspace_id=acme.pk, since=day, until=day)
        assert result["groups"] == [
            {
                "key": day,
                "clicks": 0,
                "leads": 0,
                "sales": 1,
                "revenue": [
                    {"currency": "KWD", "sales": 1, "gross_cents": 4200, "refunded_cents": 0, "net_cents": 4200}
                ],
            }
        ]
        numbers_roll_up()
    assert daily_numbers(workspace_id=acme.pk, since=day + timedelta(days=1), until=NOW.date())["total"]["sales"] == 0
