"""click_kinds: people's clicks of a range of UTC days by device, browser and referrer equal plain counts over the
clicks, before, between and after roll-ups; bots never count; filters and other workspaces stay out."""

from collections import Counter
from datetime import UTC, date, datetime, timedelta

import pytest

from clicks.models import Click
from rollups.models import DailyClickKinds
from rollups.selectors import click_kinds
from rollups.services import numbers_rebuild, numbers_roll_up
from tests.factories import ClickFactory, LinkFactory

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
AGENTS = [
    ("mobile", "Mobile Safari", "t.co"),
    ("desktop", "Chrome", ""),
    ("desktop", "Firefox", "news.example.org"),
    ("mobile", "Chrome Mobile", "t.co"),
]


def click(link, days_ago: float, n: int, *, bot: bool = False) -> None:
    device, browser, referrer = AGENTS[n % len(AGENTS)]
    made = ClickFactory(
        link=link, device="bot" if bot else device, browser=browser, referrer_domain=referrer, is_bot=bot
    )
    Click.objects.filter(pk=made.pk).update(created_at=NOW - timedelta(days=days_ago))


def plain(workspace, since: date, until: date, links=None) -> dict:
    counts = {"device": Counter(), "browser": Counter(), "referrer": Counter()}
    for c in Click.objects.filter(workspace=workspace, is_bot=False):
        if since <= c.created_at.date() <= until and (links is None or c.link_id in links):
            counts["device"][c.device] += 1
            counts["browser"][c.browser] += 1
            counts["referrer"][c.referrer_domain] += 1
    return {kind: dict(counter) for kind, counter in counts.items()}


def found(workspace, since: date, until: date, **filters) -> dict:
    return {
        kind: dict(rows)
        for kind, rows in click_kinds(workspace_id=workspace.pk, since=since, until=until, **filters).items()
    }


def test_equal_plain_counts_before_between_and_after_roll_ups(acme, globex):
    spring, autumn = LinkFactory(post__workspace=acme), LinkFactory(post__workspace=acme)
    foreign = LinkFactory(post__workspace=globex)
    for n in range(12):
        click(spring if n % 3 else autumn, days_ago=n % 6, n=n)
    click(spring, days_ago=1, n=0, bot=True)
    click(foreign, days_ago=1, n=1)
    since, until = (NOW - timedelta(days=4)).date(), NOW.date()
    expected = plain(acme, since, until)
    assert found(acme, since, until) == expected  # nothing rolled up yet: all tail
    numbers_roll_up(wait_seconds=1)
    assert DailyClickKinds.objects.filter(workspace=acme).exists()
    assert found(acme, since, until) == expected  # all rolled up
    for n in range(5):
        click(autumn, days_ago=0, n=n)  # a tail on top of the totals
    expected = plain(acme, since, until)
    assert found(acme, since, until) == expected
    assert found(acme, since, until, link_ids=[autumn.pk]) == plain(acme, since, until, links={autumn.pk})
    assert found(acme, since, until, post_ids=[spring.post_id]) == plain(acme, since, until, links={spring.pk})
    numbers_rebuild(wait_seconds=1)
    assert found(acme, since, until) == expected
    assert "bot" not in found(acme, since, until)["device"]


def test_values_come_most_clicks_first(acme):
    link = LinkFactory(post__workspace=acme)
    for n in (0, 0, 3, 1):  # mobile, mobile, mobile, desktop
        click(link, days_ago=0, n=n)
    devices = click_kinds(workspace_id=acme.pk, since=NOW.date(), until=NOW.date())["device"]
    assert devices == [("mobile", 3), ("desktop", 1)]
