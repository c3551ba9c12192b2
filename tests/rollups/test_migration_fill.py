"""Migrations that fill roll-ups: rollups/0005 fills the per-currency and daily totals from the rows already rolled
up, rollups/0007 the sends per step and day from the sends there are: afterwards the numbers (totals plus the rows
above the watermarks) still equal plain counts."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from campaigns.models import EmailSend
from rollups.models import Watermark
from rollups.selectors import campaign_step_sends, daily_numbers, money_of
from rollups.services import numbers_roll_up
from tests.backoffice.test_funnel_numbers import plain
from tests.factories import CampaignFactory, ClickFactory, ConversionEventFactory, EmailSendFactory, LinkFactory

pytestmark = pytest.mark.django_db(transaction=True)


def migrate(*targets) -> None:
    """To `targets`; none: to the newest migration of every app, where every later test expects the schema."""
    executor = MigrationExecutor(connection)
    executor.migrate(list(targets) or executor.loader.graph.leaf_nodes())
    connection.close()  # forget the prepared statements of tables dropped and made again


def test_the_fill_counts_what_the_watermarks_cover_and_the_tail_the_rest(acme):
    link = LinkFactory(post__workspace=acme)
    for value, currency in [(1000, "USD"), (500, "JPY"), (2500, "USD")]:
        click = ClickFactory(link=link)
        ConversionEventFactory(click=click, event="lead")
        ConversionEventFactory(click=click, event="sale", value_cents=value, currency=currency)
    ConversionEventFactory(click=ClickFactory(link=link, is_bot=True), event="sale", value_cents=9, is_test=True)
    numbers_roll_up()
    ConversionEventFactory(click=ClickFactory(link=link), event="sale", value_cents=100, currency="USD")  # the tail
    marks = dict(Watermark.objects.values_list("source", "last_id"))

    migrate(("rollups", "0003_campaign_number_triggers"))
    assert dict(Watermark.objects.values_list("source", "last_id"))["clicks_click"] == 0  # back: recount everything
    Watermark.objects.filter(source__in=marks).delete()
    Watermark.objects.bulk_create([Watermark(source=source, last_id=last_id) for source, last_id in marks.items()])
    migrate()

    assert money_of(group="link", link_ids=[link.pk])[link.pk] == [
        {"currency": "JPY", "sales": 1, "gross_cents": 500, "refunded_cents": 0, "net_cents": 500},
        {"currency": "USD", "sales": 3, "gross_cents": 3600, "refunded_cents": 0, "net_cents": 3600},
    ]
    today = link.created_at.date()
    total = daily_numbers(workspace_id=acme.pk, since=today, until=today)["total"]
    assert (total["clicks"], total["leads"], total["sales"]) == (4, 3, 4)
    numbers_roll_up()
    assert daily_numbers(workspace_id=acme.pk, since=today, until=today)["total"] == total


def test_the_step_sends_fill_counts_the_sends_logged_without_a_step(acme):
    campaign = CampaignFactory(workspace=acme)
    sent, failed = (
        EmailSendFactory(enrollment__campaign=campaign),
        EmailSendFactory(enrollment__campaign=campaign, status="failed"),
    )
    numbers_roll_up()  # some rolled up per step and day already; the migration back drops them

    migrate(("rollups", "0006_daily_click_kinds"))
    EmailSendFactory(enrollment__campaign=campaign, position=2)  # logged without step nor day
    reserved = EmailSendFactory(enrollment__campaign=campaign, status="reserved")
    EmailSend.objects.filter(pk=failed.pk).update(status="sent")
    EmailSend.objects.filter(pk=sent.pk).update(status="failed")
    migrate()

    def found() -> tuple[dict, dict]:
        numbers = campaign_step_sends(campaign_id=campaign.pk, since=sent.sent_at.date())
        return numbers["steps"], numbers["days"]

    assert (
        found()
        == plain(campaign)
        == (
            {1: {"sent": 1, "failed": 1}, 2: {"sent": 1, "failed": 0}},
            {(sent.sent_at.date(), 1): 1, (sent.sent_at.date(), 2): 1},
        )
    )
    EmailSend.objects.filter(pk=reserved.pk).update(status="sent")  # logged with its step now
    assert found() == plain(campaign)
    numbers_roll_up()
    assert found() == plain(campaign) and found()[0][1] == {"sent": 2, "failed": 1}
