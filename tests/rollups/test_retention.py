"""Retention (docs/privacy.md, "Retention"): clicks and conversions past a workspace's window are purged in bounded
batches, fair per workspace, only once rolled up, and every number stays what it was; a purged click id is unknown."""

import json
from datetime import UTC, date, datetime, timedelta

import pytest
import time_machine
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError

from clicks.models import Click, Link, Post
from conversions.models import ConversionEvent, Refund
from lftrack.errors import Unprocessable
from rollups import retention
from rollups.retention import retention_purge, retention_run
from rollups.selectors import click_kinds, daily_numbers, links_with_numbers, posts_with_numbers
from rollups.services import numbers_rebuild, numbers_roll_up
from tests.conftest import assert_api_error
from tests.factories import ClickFactory, ConversionEventFactory, LinkFactory, RefundFactory
from workspaces.services import workspace_retention_set

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
OLD, RECENT = NOW - timedelta(days=100), NOW - timedelta(days=5)


def click_at(moment: datetime, link: Link, **fields) -> Click:
    with time_machine.travel(moment, tick=False):
        return ClickFactory(link=link, workspace=link.workspace, **fields)


def shop(workspace) -> dict:
    """Old clicks with leads, a sale and its refund; an old bot click; an old click whose sale came recently; recent
    clicks with their conversions."""
    link = LinkFactory(post__workspace=workspace)
    old = [click_at(OLD + timedelta(minutes=i), link, device="mobile", browser="Chrome") for i in range(4)]
    ConversionEventFactory(click=old[0], event="lead", occurred_at=OLD)
    sale = ConversionEventFactory(click=old[1], event="sale", value_cents=4900, currency="EUR", occurred_at=OLD)
    with time_machine.travel(OLD + timedelta(days=1), tick=False):
        RefundFactory(conversion=sale, amount_cents=900)
    click_at(OLD, link, is_bot=True)
    held = click_at(OLD + timedelta(hours=1), link)
    ConversionEventFactory(click=held, event="sale", value_cents=1000, occurred_at=RECENT)
    recent = click_at(RECENT, link, device="desktop")
    ConversionEventFactory(click=recent, event="lead", occurred_at=RECENT)
    return {"link": link, "old": old, "held": held, "recent": recent}


def numbers(workspace) -> dict:
    """Every number a page or the API reads: by day, by link, the click kinds, the link and post totals."""
    since, until = date(2025, 1, 1), NOW.date()
    links = Link.objects.filter(workspace=workspace)
    return {
        "day": daily_numbers(workspace_id=workspace.pk, since=since, until=until, group_by="day"),
        "link": daily_numbers(workspace_id=workspace.pk, since=since, until=until, group_by="link"),
        "kinds": click_kinds(workspace_id=workspace.pk, since=since, until=until),
        "links": sorted(links_with_numbers(links=links).values()),
        "posts": sorted(posts_with_numbers(posts=Post.objects.filter(workspace=workspace)).values()),
    }


@pytest.fixture(autouse=True)
def clock():
    with time_machine.travel(NOW, tick=False) as traveller:
        yield traveller


def test_the_purge_keeps_every_number_and_forgets_the_click_ids(api, acme, acme_token):
    world = shop(acme)
    numbers_roll_up()
    before = numbers(acme)
    assert before["day"]["total"]["clicks"] == 6 and before["day"]["total"]["sales"] == 2

    assert retention_purge().clicks == 0  # keep forever: nothing goes
    workspace_retention_set(workspace=acme, days=30)
    result = retention_purge()
    assert (result.clicks, result.conversions, result.refunds, result.more) == (5, 2, 1, False)
    assert numbers(acme) == before
    numbers_roll_up()
    assert numbers(acme) == before
    # what is left: the old click whose sale is recent, the recent click
    assert set(Click.objects.values_list("pk", flat=True)) == {world["held"].pk, world["recent"].pk}
    assert ConversionEvent.objects.count() == 2 and not Refund.objects.exists()
    # a purged click id is unknown, as docs/api.md says; a kept one still converts
    gone = api.post("/api/v1/conversions", {"event": "lead", "click_id": world["old"][0].click_id}, token=acme_token)
    assert_api_error(gone, 422, "unknown click_id")
    kept = api.post("/api/v1/conversions", {"event": "lead", "click_id": world["held"].click_id}, token=acme_token)
    assert kept.status_code == 201
    # a second pass finds nothing more; the rebuild, which would recount without the purged rows, refuses
    assert retention_purge().clicks == 0
    with pytest.raises(Unprocessable, match="retention purged"):
        numbers_rebuild()


def test_rows_not_rolled_up_are_never_purged(acme, clock):
    world = shop(acme)
    workspace_retention_set(workspace=acme, days=30)
    before = numbers(acme)
    assert retention_purge().clicks == 0  # nothing rolled up yet
    numbers_roll_up()
    late_sale = ConversionEventFactory(click=world["old"][2], event="sale", value_cents=7, occurred_at=OLD)
    before = numbers(acme)
    # old[0], old[1], old[3], the bot: old[2] waits for its sale, which is above the watermark
    assert retention_purge().clicks == 4
    assert Click.objects.filter(pk=world["old"][2].pk).exists()
    assert ConversionEvent.objects.filter(pk=late_sale.pk).exists()
    assert numbers(acme) == before
    numbers_roll_up()
    assert (retention_purge().conversions, Click.objects.filter(pk=world["old"][2].pk).exists()) == (1, False)
    assert numbers(acme) == before


def test_a_refund_not_rolled_up_keeps_its_sale_and_click(acme):
    world = shop(acme)
    workspace_retention_set(workspace=acme, days=30)
    numbers_roll_up()
    sale = ConversionEvent.objects.get(click=world["old"][1])
    RefundFactory(conversion=sale, amount_cents=100)
    before = numbers(acme)
    retention_purge()
    assert Click.objects.filter(pk=world["old"][1].pk).exists() and Refund.objects.filter(conversion=sale).count() == 2
    assert numbers(acme) == before
    numbers_roll_up()
    retention_purge()
    assert not Click.objects.filter(pk=world["old"][1].pk).exists()
    assert numbers(acme) == before


def test_a_flooded_workspace_leaves_the_others_purged_on_time(acme, globex):
    """Noisy neighbour: acme's backlog of 40 old clicks takes many passes; globex's 3 go in the first."""
    big, small = LinkFactory(post__workspace=acme), LinkFactory(post__workspace=globex)
    for i in range(40):
        click_at(OLD + timedelta(seconds=i), big)
    for i in range(3):
        click_at(OLD + timedelta(seconds=i), small)
    numbers_roll_up()
    workspace_retention_set(workspace=acme, days=30)
    workspace_retention_set(workspace=globex, days=30)
    first = retention_purge(limit=5)
    assert (first.clicks, first.more) == (8, True)
    assert Click.objects.filter(workspace=globex).count() == 0
    assert Click.objects.filter(workspace=acme).count() == 35
    run = retention_run(seconds=30, limit=5)
    # seven whole batches, then a pass that finds the backlog gone
    assert (run["clicks"], run["more"], run["passes"]) == (35, False, 8)
    assert not Click.objects.exists()


def test_a_failing_workspace_is_logged_and_skipped(acme, globex, monkeypatch, caplog):
    LinkFactory(post__workspace=acme)
    small = LinkFactory(post__workspace=globex)
    click_at(OLD, small)
    numbers_roll_up()
    workspace_retention_set(workspace=acme, days=30)
    workspace_retention_set(workspace=globex, days=30)
    real = retention.workspace_purge

    def poisoned(*, workspace, **kwargs):
        if workspace.pk == acme.pk:
            raise DatabaseError("boom")
        return real(workspace=workspace, **kwargs)

    monkeypatch.setattr(retention, "workspace_purge", poisoned)
    result = retention_purge()
    assert (result.clicks, result.failed) == (1, [acme.pk])
    assert [r.workspace_id for r in caplog.records if r.getMessage() == "retention purge failed"] == [acme.pk]


def test_the_cli_sets_the_window_and_purges(acme, capsys):
    shop(acme)
    numbers_roll_up()
    call_command("workspace", "retention", "acme", "30")
    assert json.loads(capsys.readouterr().out) == {"slug": "acme", "retention_days": 30}
    call_command("retention", "purge", "--batch-size", "2")
    printed = json.loads(capsys.readouterr().out)
    assert (printed["clicks"], printed["more"], printed["failed"]) == (5, False, [])
    call_command("workspace", "retention", "acme", "forever")
    assert json.loads(capsys.readouterr().out) == {"slug": "acme", "retention_days": None}
    for bad in ("0", "36501", "-3", "ten"):
        with pytest.raises(CommandError):
            call_command("workspace", "retention", "acme", bad)
    with pytest.raises(CommandError, match="--batch-size"):
        call_command("retention", "purge", "--batch-size", "0")


def test_ids_out_of_time_order_are_still_purged_exactly(acme):
    """The bisection assumes ids follow time; a click inserted late with an old time is left, never a new one
    taken: each row's time is checked again."""
    link = LinkFactory(post__workspace=acme)
    first = click_at(OLD, link)
    newer = click_at(RECENT, link)
    backdated = click_at(OLD, link)
    numbers_roll_up()
    workspace_retention_set(workspace=acme, days=30)
    retention_purge()
    assert not Click.objects.filter(pk=first.pk).exists()
    assert Click.objects.filter(pk=newer.pk).exists()
    assert Click.objects.filter(pk=backdated.pk).exists()  # behind a newer id: left, never wrongly deleted
