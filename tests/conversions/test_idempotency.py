"""Idempotency-Key on POST /api/v1/conversions: replays, body mismatch, 24 hours, purge, races."""

import json
import threading
from datetime import timedelta
from io import StringIO

import pytest
import time_machine
from django.core.management import call_command
from django.db import connection, transaction
from django.utils import timezone

from conversions.models import ConversionEvent, IdempotencyKey
from customers.models import Customer
from tests.conftest import ApiClient, assert_api_error, start_threads
from tests.factories import ApiTokenFactory, ClickFactory, CustomerFactory
from workspaces.tokens import api_token_create

pytestmark = pytest.mark.django_db

URL = "/api/v1/conversions"
START = "2026-03-01 12:00:00+00:00"


@pytest.fixture
def click(acme):
    return ClickFactory(link__post__workspace=acme, workspace=acme)


def sale(click, **extra):
    return {
        "event": "sale",
        "click_id": click.click_id,
        "value_cents": 49000,
        "customer": {"email": "ada@example.com", "external_id": "user_42"},
        **extra,
    }


def post(api, body, token, key, **extra):
    return api.post(URL, body, token=token, HTTP_IDEMPOTENCY_KEY=key, **extra)


def test_retry_with_the_same_key_replays_the_first_answer_and_stores_nothing(api, acme_token, click):
    first = post(api, sale(click), acme_token, "order-1001")
    assert first.status_code == 201 and "Idempotent-Replayed" not in first
    again = post(api, sale(click), acme_token, "order-1001")
    assert again.status_code == 201
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true"
    assert ConversionEvent.objects.count() == 1  # revenue counted once
    assert Customer.objects.count() == 1
    key = IdempotencyKey.objects.get()
    assert (key.workspace, key.key, key.status_code, key.response_body) == (
        acme_token.workspace,
        "order-1001",
        201,
        first.json(),
    )


def test_replay_survives_later_changes(api, acme_token, click):
    first = post(api, sale(click), acme_token, "order-1001").json()
    Customer.objects.update(external_id="changed")
    assert post(api, sale(click), acme_token, "order-1001").json() == first


def test_key_order_and_whitespace_do_not_make_a_different_body(api, acme_token, click):
    body = sale(click)
    first = post(api, body, acme_token, "k1")
    reordered = json.dumps(dict(reversed(list(body.items()))), indent=2)
    again = api.post(URL, raw=reordered, token=acme_token, HTTP_IDEMPOTENCY_KEY="k1")
    assert again["Idempotent-Replayed"] == "true" and again.json() == first.json()


def test_same_key_with_a_different_body_is_422_and_stores_nothing(api, acme_token, click):
    first = post(api, sale(click), acme_token, "order-1001")
    resp = post(api, sale(click, value_cents=1), acme_token, "order-1001")
    assert_api_error(resp, 422, "idempotency key reused with a different body")
    assert ConversionEvent.objects.count() == 1
    assert IdempotencyKey.objects.get().response_body == first.json()


def test_requests_without_a_key_are_each_stored(api, acme_token, click):
    api.post(URL, sale(click), token=acme_token)
    api.post(URL, sale(click), token=acme_token)
    assert ConversionEvent.objects.count() == 2
    assert not IdempotencyKey.objects.exists()


def test_different_keys_are_different_requests(api, acme_token, click):
    post(api, sale(click), acme_token, "a")
    post(api, sale(click), acme_token, "b")
    assert ConversionEvent.objects.count() == 2


def test_keys_are_scoped_to_the_workspace(api, acme_token, globex_token, click):
    theirs = ClickFactory(link__post__workspace=globex_token.workspace, workspace=globex_token.workspace)
    mine = post(api, sale(click), acme_token, "shared-key")
    other = post(api, sale(theirs), globex_token, "shared-key")
    assert other.status_code == 201 and "Idempotent-Replayed" not in other
    assert mine.json()["id"] != other.json()["id"]
    # Another token of the same workspace replays (the key belongs to the workspace).
    second_token = ApiTokenFactory(workspace=acme_token.workspace)
    assert post(api, sale(click), second_token, "shared-key")["Idempotent-Replayed"] == "true"


def test_a_test_token_never_replays_a_live_answer_nor_takes_its_key(api, acme, acme_token, click):
    """Keys are per mode, as invoice ids and refund ids are: a test request and a live one with the same key and
    body are two requests, whichever comes first, and each mode replays only its own answers."""
    test_token = api_token_create(workspace=acme, name="trying", test=True).secret
    test_first = post(api, sale(click), test_token, "order-1")
    live = post(api, sale(click), acme_token, "order-1")
    assert (test_first.status_code, live.status_code) == (201, 201) and "Idempotent-Replayed" not in live
    assert live.json()["id"] != test_first.json()["id"]
    assert ConversionEvent.objects.get(pk=live.json()["id"]).is_test is False  # the live sale is recorded
    live_first = post(api, sale(click), acme_token, "order-2")
    test_later = post(api, sale(click), test_token, "order-2")
    assert "Idempotent-Replayed" not in test_later and test_later.json()["id"] != live_first.json()["id"]
    assert ConversionEvent.objects.get(pk=test_later.json()["id"]).is_test is True
    for token, first in ((acme_token, live), (test_token, test_first)):  # each mode replays its own
        again = post(api, sale(click), token, "order-1")
        assert again["Idempotent-Replayed"] == "true" and again.json() == first.json()
    assert ConversionEvent.objects.count() == 4
    assert sorted(IdempotencyKey.objects.values_list("key", "is_test")) == [
        ("order-1", False),
        ("order-1", True),
        ("order-2", False),
        ("order-2", True),
    ]


def test_a_rejected_request_does_not_use_up_its_key(api, acme_token, click):
    bad = sale(click, click_id="no-such-click")
    assert_api_error(post(api, bad, acme_token, "order-1"), 422, "unknown click_id")
    assert_api_error(post(api, bad, acme_token, "order-1"), 422, "unknown click_id")
    assert not IdempotencyKey.objects.exists() and not ConversionEvent.objects.exists()
    # Corrected, the retry with the same key goes through.
    assert post(api, sale(click), acme_token, "order-1").status_code == 201
    assert ConversionEvent.objects.count() == 1


def test_key_of_255_characters_is_accepted(api, acme_token, click):
    assert post(api, sale(click), acme_token, "k" * 255).status_code == 201
    assert IdempotencyKey.objects.get().key == "k" * 255


def test_key_over_255_characters_is_422_and_stores_nothing(api, acme_token, click):
    assert_api_error(post(api, sale(click), acme_token, "k" * 256), 422, "Idempotency-Key is too long")
    assert not ConversionEvent.objects.exists() and not IdempotencyKey.objects.exists()


@pytest.mark.parametrize("key", ["", "caf\u00e9", "tab\there"])
def test_empty_or_non_ascii_key_is_422(api, acme_token, click, key):
    resp = post(api, sale(click), acme_token, key)
    assert_api_error(resp, 422, "Idempotency-Key must be 1 to 255 printable ASCII characters")
    assert not ConversionEvent.objects.exists()


def test_key_is_kept_24_hours_then_counts_as_new(api, acme_token, click):
    with time_machine.travel(START, tick=False) as clock:
        first = post(api, sale(click), acme_token, "order-1001")
        clock.shift(timedelta(hours=24) - timedelta(seconds=1))
        assert post(api, sale(click), acme_token, "order-1001")["Idempotent-Replayed"] == "true"
        clock.shift(timedelta(seconds=2))
        late = post(api, sale(click), acme_token, "order-1001")
        assert late.status_code == 201 and "Idempotent-Replayed" not in late
        assert late.json()["id"] != first.json()["id"]
        assert ConversionEvent.objects.count() == 2
        # The expired record was taken over: one row per key, now holding the new answer.
        key = IdempotencyKey.objects.get()
        assert (key.response_body, key.created_at) == (late.json(), timezone.now())
        # ... and it replays from now on, even with a body the old one never saw.
        assert_api_error(
            post(api, sale(click, value_cents=5), acme_token, "order-1001"),
            422,
            "idempotency key reused with a different body",
        )


def test_purge_command_deletes_expired_keys_only(acme_token, click, api):
    with time_machine.travel(START, tick=False) as clock:
        post(api, sale(click), acme_token, "old")
        clock.shift(timedelta(hours=2))
        post(api, sale(click), acme_token, "recent")
        clock.shift(timedelta(hours=22, seconds=1))  # "old" is 24 h + 1 s old, "recent" 22 h + 1 s
        out = StringIO()
        call_command("idempotency", "purge", stdout=out)
        assert json.loads(out.getvalue()) == {"purged": 1}
        assert list(IdempotencyKey.objects.values_list("key", flat=True)) == ["recent"]
        assert ConversionEvent.objects.count() == 2  # the events themselves stay


@pytest.mark.django_db(transaction=True)
def test_sixteen_concurrent_requests_with_one_key_store_one_event(acme):
    token = ApiTokenFactory(workspace=acme)
    click = ClickFactory(link__post__workspace=acme, workspace=acme)
    threads, answers = start_threads(16, lambda i: post(ApiClient(), sale(click), token, "webhook-evt-1"))
    for thread in threads:
        thread.join(timeout=60)
    assert [getattr(a, "status_code", a) for a in answers] == [201] * 16
    assert len({json.dumps(a.json(), sort_keys=True) for a in answers}) == 1
    assert sum(a.get("Idempotent-Replayed") == "true" for a in answers) == 15
    assert ConversionEvent.objects.count() == 1
    assert Customer.objects.count() == 1
    assert IdempotencyKey.objects.count() == 1


def waiting_on_locks(expected: int) -> None:
    """Poll PostgreSQL until `expected` other sessions of this database wait on a lock (at most 10 s)."""
    for _ in range(1000):
        with connection.cursor() as cursor:
            # Inside a transaction pg_stat_activity is read once and cached: drop that snapshot.
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
            )
            if cursor.fetchone()[0] >= expected:
                return
        threading.Event().wait(0.01)
    raise AssertionError(f"{expected} sessions never waited on a lock")


@pytest.mark.django_db(transaction=True)
def test_retry_arriving_while_the_first_is_in_flight_waits_and_replays(acme):
    token = ApiTokenFactory(workspace=acme)
    click = ClickFactory(link__post__workspace=acme, workspace=acme)
    # This test's own transaction creates the same person without committing: the first request
    # then stays in flight (its customer insert waits for ours), holding its claim on the key.
    with transaction.atomic():
        CustomerFactory(workspace=acme, email="ada@example.com", external_id="")
        first_thread, first = start_threads(1, lambda i: post(ApiClient(), sale(click), token, "evt-1"))
        waiting_on_locks(1)
        retry_thread, retry = start_threads(1, lambda i: post(ApiClient(), sale(click), token, "evt-1"))
        waiting_on_locks(2)  # the retry waits for the first request's claim, not failing, not storing
        assert not ConversionEvent.objects.exists()
    for thread in first_thread + retry_thread:
        thread.join(timeout=60)
    assert first[0].status_code == 201 and "Idempotent-Replayed" not in first[0]
    assert retry[0].status_code == 201 and retry[0]["Idempotent-Replayed"] == "true"
    assert retry[0].json() == first[0].json()
    assert ConversionEvent.objects.count() == 1
    ada = Customer.objects.get()
    assert first[0].json()["customer"] == {"id": ada.pk, "external_id": "user_42"}
