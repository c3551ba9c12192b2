"""Roll-ups against writers still open and against each other, on PostgreSQL: every row counted once."""

import threading

import pytest
from django.db import transaction

from clicks.models import Click
from conversions.models import ConversionEvent
from rollups.models import LinkTotals
from rollups.services import numbers_roll_up
from tests.conftest import assert_api_error, run_in_threads, start_threads
from tests.factories import ClickFactory, LinkFactory

pytestmark = pytest.mark.django_db(transaction=True)


def open_click(link, release: threading.Event, inserted: threading.Event):
    """A click inserted in a transaction that stays open until `release`: it holds the lower id."""

    def write(i: int) -> int:
        with transaction.atomic():
            click = ClickFactory(link=link)
            inserted.set()
            release.wait(10)
        return click.pk

    return write


def test_an_open_insert_below_the_newest_click_holds_the_watermark_back():
    link = LinkFactory()
    inserted, release = threading.Event(), threading.Event()
    threads, results = start_threads(1, open_click(link, release, inserted))
    assert inserted.wait(10)
    newest = ClickFactory(link=link)  # committed, with the higher id

    assert numbers_roll_up(wait_seconds=0.2)["clicks_click"] is None  # skipped, not moved past the open one
    assert not LinkTotals.objects.filter(link=link).exists()

    release.set()
    threads[0].join(10)
    assert results[0] < newest.pk
    assert numbers_roll_up()["clicks_click"] == newest.pk
    assert LinkTotals.objects.get(link=link).clicks == 2 == Click.objects.filter(link=link).count()


def test_a_roll_up_waits_for_an_insert_that_commits_soon():
    link = LinkFactory()
    inserted, release = threading.Event(), threading.Event()
    threads, _ = start_threads(1, open_click(link, release, inserted))
    assert inserted.wait(10)
    newest = ClickFactory(link=link)
    threading.Timer(0.3, release.set).start()

    assert numbers_roll_up(wait_seconds=10)["clicks_click"] == newest.pk
    threads[0].join(10)
    assert LinkTotals.objects.get(link=link).clicks == 2


def test_simultaneous_roll_ups_add_each_row_once():
    link = LinkFactory()
    for _ in range(5):
        ClickFactory(link=link)
    results = run_in_threads(4, lambda i: numbers_roll_up())
    assert all(isinstance(result, dict) for result in results), results
    assert LinkTotals.objects.get(link=link).clicks == 5


def test_a_conversion_on_a_click_being_purged_is_an_unknown_click_id_not_a_500(api, acme, acme_token):
    """Retention deletes a click (its batch still open) as a lead arrives for it: the lead waits for the delete and,
    once it commits, gets the documented 422 for a purged click id, with nothing stored."""
    click = ClickFactory(link=LinkFactory(post__workspace=acme), workspace=acme)
    deleted, release = threading.Event(), threading.Event()

    def purge(i: int) -> None:
        with transaction.atomic():
            Click.objects.filter(pk=click.pk).delete()
            deleted.set()
            release.wait(10)

    threads, _ = start_threads(1, purge)
    assert deleted.wait(10)
    threading.Timer(0.5, release.set).start()  # the lead below waits on the click's row until then
    answer = api.post("/api/v1/conversions", {"event": "lead", "click_id": click.click_id}, token=acme_token)
    threads[0].join(10)
    assert_api_error(answer, 422, "unknown click_id")
    assert not ConversionEvent.objects.exists()
