"""The conversions list over a range of UTC days (`since`, `until`, both included, as the dashboard and the analytics
API read them): the rows of those days only, in the list and its CSV export; a day not understood said on the page,
never a 500; another workspace's rows never shown; the range served by the (workspace, -occurred_at) index."""

import csv
import io
from datetime import UTC, datetime

import pytest
from django.db import connection, transaction
from django.urls import reverse

from conversions.models import ConversionEvent
from tests.factories import ConversionEventFactory

pytestmark = pytest.mark.django_db

LIST = reverse("admin:conversions_conversionevent_changelist")
EXPORT = reverse("admin:conversions_conversionevent_export")


def at(day: int, hour: int = 12) -> datetime:
    return datetime(2026, 3, day, hour, tzinfo=UTC)


@pytest.fixture
def month(acme, globex):
    """A lead or sale of acme on 1, 2, 3 and 4 March (the 3rd at the last second of its UTC day), one of globex."""
    made = {
        day: ConversionEventFactory(
            click__link__post__workspace=acme, event="sale" if day % 2 else "lead", occurred_at=at(day, hour)
        )
        for day, hour in ((1, 0), (2, 12), (3, 23), (4, 12))
    }
    made[3].occurred_at = datetime(2026, 3, 3, 23, 59, 59, 999999, tzinfo=UTC)
    ConversionEvent.objects.filter(pk=made[3].pk).update(occurred_at=made[3].occurred_at)
    ConversionEventFactory(click__link__post__workspace=globex, occurred_at=at(2))
    return made


def days_listed(client, **params) -> list[int]:
    response = client.get(LIST, params)
    assert response.status_code == 200
    return [event.occurred_at.day for event in response.context["cl"].result_list]


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, [4, 3, 2, 1]),
        ({"since": "2026-03-02", "until": "2026-03-03"}, [3, 2]),
        ({"since": "2026-03-03"}, [4, 3]),
        ({"until": "2026-03-01"}, [1]),
        ({"since": "2026-03-02", "until": "2026-03-02"}, [2]),
        ({"since": "2026-03-05"}, []),
    ],
)
def test_the_list_shows_the_days_of_the_range(as_bob, month, params, expected):
    assert days_listed(as_bob, **params) == expected


def test_the_range_goes_with_the_other_filters_and_the_form_keeps_them(as_bob, month):
    assert days_listed(as_bob, since="2026-03-02", event__exact="sale") == [3]
    page = as_bob.get(LIST, {"since": "2026-03-02", "event__exact": "sale", "o": "1"}).content.decode()
    assert '<input type="hidden" name="event__exact" value="sale">' in page
    assert '<input type="hidden" name="o" value="1">' in page
    assert 'name="since" value="2026-03-02"' in page
    assert "Any time</a>" in page


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"since": "yesterday"}, "since must be a date (YYYY-MM-DD)"),
        ({"until": "2026-02-30"}, "until must be a date (YYYY-MM-DD)"),
        ({"since": "2026-03-01T00:00"}, "since must be a date (YYYY-MM-DD)"),
        ({"since": "2026-03-04", "until": "2026-03-02"}, "since is after until"),
    ],
)
def test_a_range_not_understood_is_said_and_not_applied(as_bob, month, params, message):
    response = as_bob.get(LIST, params)
    assert response.status_code == 200
    assert f"Date range not applied: {message}." in response.content.decode()
    assert [event.occurred_at.day for event in response.context["cl"].result_list] == [4, 3, 2, 1]


def test_another_workspaces_rows_stay_out_of_every_range(as_charlie, month):
    assert days_listed(as_charlie, since="2026-03-01", until="2026-03-31") == [2]


def test_the_export_holds_the_range(as_bob, month):
    response = as_bob.get(EXPORT, {"since": "2026-03-03", "until": "2026-03-04"})
    assert response.status_code == 200
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode()[1:])))
    assert sorted(row["id"] for row in rows) == sorted(str(month[day].pk) for day in (3, 4))


def test_the_range_is_read_through_the_workspace_time_index(acme, month):
    rows = ConversionEvent.objects.filter(
        workspace=acme, is_test=False, occurred_at__gte=at(2, 0), occurred_at__lt=at(4, 0)
    ).order_by("-occurred_at", "-pk")[:100]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a tiny table: ask whether the index can serve it
        plan = rows.explain()
    assert "conversions_event_recent" in plan
