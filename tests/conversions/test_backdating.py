"""Backdated conversions (`occurred_at`, a backfill): stored at that time, bounded, after their click."""

from datetime import timedelta

import pytest
from django.utils import timezone

from conversions.models import ConversionEvent
from customers.models import Customer
from tests.conftest import assert_api_error
from tests.factories import ClickFactory

pytestmark = pytest.mark.django_db
URL = "/api/v1/conversions"


@pytest.fixture
def old_click(acme):
    click = ClickFactory(link__post__workspace=acme)
    type(click).objects.filter(pk=click.pk).update(created_at=timezone.now() - timedelta(days=30))
    return click


def test_a_backdated_sale_is_stored_at_its_time_and_answered_so(api, acme, acme_token, time_machine):
    time_machine.move_to("2026-11-20T12:00:00Z", tick=False)
    click = ClickFactory(link__post__workspace=acme)
    type(click).objects.filter(pk=click.pk).update(created_at=timezone.now() - timedelta(days=30))
    body = {
        "event": "sale",
        "click_id": click.click_id,
        "value_cents": 1000,
        "occurred_at": "2026-11-01T10:00:00+01:00",
    }
    response = api.post(URL, body, token=acme_token)
    assert response.status_code == 201 and response.json()["occurred_at"] == "2026-11-01T09:00:00.000000Z"
    assert ConversionEvent.objects.get().occurred_at.isoformat() == "2026-11-01T09:00:00+00:00"


def test_backdating_relative_to_now(api, acme_token, old_click):
    at = timezone.now() - timedelta(days=10)
    response = api.post(
        URL, {"event": "lead", "click_id": old_click.click_id, "occurred_at": at.isoformat()}, token=acme_token
    )
    assert response.status_code == 201
    assert abs(ConversionEvent.objects.get().occurred_at - at) < timedelta(milliseconds=1)


@pytest.mark.parametrize(
    ("days_ago", "message"),
    [
        (-1, "occurred_at is in the future"),
        (91, "occurred_at is more than 90 days ago"),
        (40, "occurred_at is before the click"),
    ],
)
def test_bounds_and_the_click_refuse_with_nothing_stored(api, acme_token, old_click, days_ago, message):
    at = (timezone.now() - timedelta(days=days_ago)).isoformat()
    body = {
        "event": "sale",
        "click_id": old_click.click_id,
        "occurred_at": at,
        "customer": {"email": "ada@example.com"},
    }
    assert_api_error(api.post(URL, body, token=acme_token), 422, message)
    assert not ConversionEvent.objects.exists() and not Customer.objects.exists()


@pytest.mark.parametrize("value", ["yesterday", "2026-11-01T10:00:00", 1700000000])
def test_malformed_times_are_422(api, acme_token, old_click, value):
    body = {"event": "lead", "click_id": old_click.click_id, "occurred_at": value}
    expected = (
        "occurred_at must be a string"
        if not isinstance(value, str)
        else "occurred_at must be an ISO 8601 time with an offset"
    )
    assert_api_error(api.post(URL, body, token=acme_token), 422, expected)


def test_the_window_is_a_setting(api, acme_token, old_click, settings):
    settings.BACKDATE_WINDOW_DAYS = 7
    at = (timezone.now() - timedelta(days=8)).isoformat()
    assert_api_error(
        api.post(URL, {"event": "lead", "click_id": old_click.click_id, "occurred_at": at}, token=acme_token),
        422,
        "occurred_at is more than 7 days ago",
    )


def test_a_clicks_own_moment_is_allowed_and_an_unknown_click_stays_unknown(api, acme_token, old_click):
    old_click.refresh_from_db()
    body = {"event": "lead", "click_id": old_click.click_id, "occurred_at": old_click.created_at.isoformat()}
    assert api.post(URL, body, token=acme_token).status_code == 201
    unknown = {"event": "lead", "click_id": "nope", "occurred_at": timezone.now().isoformat()}
    assert_api_error(api.post(URL, unknown, token=acme_token), 422, "unknown click_id")
