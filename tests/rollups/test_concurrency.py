"""Roll-ups against writers still open and against each other, on PostgreSQL: every row counted once."""

import threading

import pytest
from django.db import transaction

from clicks.models import Click
from rollups.models import LinkTotals
from rollups.services import numbers_roll_up
from tests.conftest import run_in_threads, start_threads
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
