"""The roll-up as a shared job: one workspace's backlog, sums or broken rows never hold up another's numbers. Each
test gives workspace A the trouble and B one row, and B's numbers must be rolled up by the first pass."""

import io
import json
import logging
import threading
import time

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.utils import timezone

from clicks.models import Click, Link
from conversions.models import ConversionEvent
from lftrack.currencies import MONEY_MAX
from lftrack.logs import JsonFormatter
from rollups import services
from rollups.models import DailyTotals, LinkTotals, Watermark
from rollups.selectors import daily_numbers
from rollups.services import numbers_roll_up
from tests.factories import ClickFactory, ConversionEventFactory, LinkFactory

SALES = "conversions_conversionevent"


def b_rolled_up(link: Link, *, clicks: int, revenue: int = 0) -> bool:
    """B's link has `clicks` and `revenue` in its totals (not in the live tail), and every watermark is at the top."""
    totals = {row.currency: row for row in LinkTotals.objects.filter(link=link)}
    marks = dict(Watermark.objects.values_list("source", "last_id"))
    tops = {
        table: model.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        for table, model in (("clicks_click", Click), (SALES, ConversionEvent))
    }
    return (
        totals[""].clicks == clicks
        and sum(row.revenue_cents for row in totals.values()) == revenue
        and all(marks[table] == top for table, top in tops.items())
    )


def left_out_lines(caplog) -> list[dict]:
    """The roll-up's lines about rows left out, as the JSON formatter writes them: one line each."""
    lines = [
        JsonFormatter().format(record) for record in caplog.records if record.getMessage() == "roll-up left rows out"
    ]
    assert all("\n" not in line for line in lines)
    return [json.loads(line) for line in lines]


@pytest.mark.django_db
def test_a_backlog_and_sums_past_bigint_leave_the_other_workspace_rolled_up_in_one_pass(acme, globex, caplog):
    """A: 3,000 clicks on a link and, on another, 1,100 sales of the largest amount in one day, whose sum (9.9e18)
    passes bigint and used to fail every workspace's roll-up, every minute. B: one click and one sale."""
    theirs, poisoned = LinkFactory(post__workspace=acme), LinkFactory(post__workspace=acme)
    Click.objects.bulk_create([Click(workspace=acme, link=theirs) for _ in range(3000)])
    click, now = ClickFactory(link=poisoned), timezone.now()
    ConversionEvent.objects.bulk_create(
        [
            ConversionEvent(
                workspace=acme,
                click=click,
                link=poisoned,
                event="sale",
                value_cents=MONEY_MAX,
                occurred_at=now,
                channel="api",
                invoice_id=f"in_{n}",
            )
            for n in range(1100)
        ]
    )
    ConversionEventFactory(click=click, event="lead")
    mine = ConversionEventFactory(click__link__post__workspace=globex, event="sale", value_cents=4900)
    caplog.set_level(logging.WARNING, logger="lftrack.rollups")

    numbers_roll_up()

    assert b_rolled_up(mine.link, clicks=1, revenue=4900)
    assert LinkTotals.objects.get(link=theirs).clicks == 3000  # A's backlog, and its clicks, in the same pass
    (line,) = left_out_lines(caplog)  # the link whose sum cannot be held: left out, said once
    assert {key: line[key] for key in ("source", "workspace_id", "link_id", "sqlstate")} == {
        "source": SALES,
        "workspace_id": acme.pk,
        "link_id": [poisoned.pk],
        "sqlstate": "22003",
    }
    total = daily_numbers(workspace_id=acme.pk, since=now.date(), until=now.date())["total"]  # no error for A either
    assert (total["clicks"], total["leads"], total["sales"]) == (3001, 0, 0)


@pytest.mark.django_db
def test_rows_that_keep_failing_are_left_out_and_logged_once_per_pass(acme, globex, caplog):
    """A row that fails for a reason nobody foresaw (here a trigger refusing the daily totals of A's first link)
    leaves that link's rows out, one JSON line per pass names it, and everyone else is rolled up, A's other link too.
    Once mended, `--rebuild` counts the rows left out."""
    broken, fine = LinkFactory(post__workspace=acme), LinkFactory(post__workspace=acme)
    mine = LinkFactory(post__workspace=globex)
    with connection.cursor() as cursor:
        cursor.execute(f"""
            CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'refused' USING ERRCODE = 'numeric_value_out_of_range'; END $$;
            CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON rollups_dailytotals
            FOR EACH ROW WHEN (NEW.link_id = {broken.pk}) EXECUTE FUNCTION refuse();
        """)
    caplog.set_level(logging.WARNING, logger="lftrack.rollups")
    for rolled in (1, 2):
        for link in (broken, fine, mine):
            ClickFactory(link=link)
        numbers_roll_up()

        assert b_rolled_up(mine, clicks=rolled)
        assert LinkTotals.objects.get(link=fine).clicks == rolled
        assert (
            not LinkTotals.objects.filter(link=broken).exists() and not DailyTotals.objects.filter(link=broken).exists()
        )
        lines = left_out_lines(caplog)
        assert len(lines) == rolled  # one per pass
        assert {key: lines[-1][key] for key in ("level", "source", "workspace_id", "link_id", "sqlstate", "error")} == {
            "level": "WARNING",
            "source": "clicks_click",
            "workspace_id": acme.pk,
            "link_id": [broken.pk],
            "sqlstate": "22003",
            "error": "refused",
        }

    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER refuse ON rollups_dailytotals")
    call_command("roll_up_numbers", "--rebuild", stdout=io.StringIO())
    assert LinkTotals.objects.get(link=broken).clicks == 2


@pytest.mark.django_db(transaction=True)
def test_a_link_deleted_while_its_rows_are_added_leaves_the_others_rolled_up(acme, globex, monkeypatch):
    """A deletes a link while the roll-up adds its clicks: the statement that added them fails on the link's foreign
    key, the rows of everyone else go in on a second try, and the watermark moves. (It used to fail the commit of
    the whole pass, for every workspace.)"""
    doomed, mine = LinkFactory(post__workspace=acme), LinkFactory(post__workspace=globex)
    ClickFactory(link=doomed)
    ClickFactory(link=mine)
    deleted, done = threading.Event(), threading.Event()

    def delete_link() -> None:
        """A's deletion, open until the roll-up waits on it (or 5 s), then committed."""
        try:
            with transaction.atomic():
                Link.objects.filter(pk=doomed.pk).delete()
                deleted.set()
                deadline = time.monotonic() + 5
                with connection.cursor() as cursor:
                    while time.monotonic() < deadline:
                        cursor.execute(
                            "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                            " AND datname = current_database()"
                        )
                        if cursor.fetchone():
                            break
                        time.sleep(0.01)
        finally:
            connection.close()
            done.set()

    settled = services.settled_max_id

    def settled_then_delete(*, table: str, wait_seconds: float) -> int | None:
        top = settled(table=table, wait_seconds=wait_seconds)
        if table == "clicks_click":  # the roll-up has its range: now A deletes the link
            threading.Thread(target=delete_link).start()
            assert deleted.wait(10)
        return top

    monkeypatch.setattr(services, "settled_max_id", settled_then_delete)
    result = numbers_roll_up()
    assert done.wait(10)

    assert not Link.objects.filter(pk=doomed.pk).exists()
    assert result["clicks_click"] == Click.objects.order_by("-pk").first().pk
    assert b_rolled_up(mine, clicks=1)
    assert not LinkTotals.objects.filter(link_id=doomed.pk).exists()
