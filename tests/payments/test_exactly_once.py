"""Exactly once against a real gunicorn and PostgreSQL: 50 parallel deliveries of one event, and a database outage
answered 503 whose retried event is recorded once."""

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection as db

from conversions.models import ConversionEvent, Refund
from payments.models import Delivery
from tests.conftest import database_url
from tests.faults.conftest import database_upstream, running_gunicorn
from tests.faults.proxy import FaultProxy
from tests.payments.providers import checkout_session, post, refund, sid, stripe_event, stripe_signed

pytestmark = pytest.mark.django_db(transaction=True)
PARALLEL = 50


def test_fifty_parallel_deliveries_of_one_event_record_one_sale_and_one_refund(stripe_connection, click):
    intent = sid("pi")
    sale_event = stripe_event(
        "checkout.session.completed",
        checkout_session(mode="payment", amount=2500, click_id=click.click_id, payment_intent=intent),
    )
    refund_event = stripe_event("refund.created", refund(amount=1000, payment_intent=intent))
    # Two workers of twelve threads: two dozen deliveries in flight at once, each on its own connection.
    with running_gunicorn(database=database_url(), WEB_CONCURRENCY="2", GUNICORN_THREADS="12") as (base, _):
        url = f"{base}/hooks/payments/{stripe_connection.url_token}"
        for event in (sale_event, refund_event):
            body, headers = stripe_signed(event)
            with ThreadPoolExecutor(PARALLEL) as pool:
                answers = list(pool.map(post, [url] * PARALLEL, [body] * PARALLEL, [headers] * PARALLEL))
            assert {a.status_code for a in answers} == {200}
            outcomes = sorted(a.json()["outcome"] for a in answers)
            assert outcomes.count("duplicate") == PARALLEL - 1, outcomes
    sale = ConversionEvent.objects.get()
    assert (sale.value_cents, sale.click_id) == (2500, click.pk)
    assert Refund.objects.get().amount_cents == 1000
    assert sorted(Delivery.objects.values_list("repeats", flat=True)) == [PARALLEL - 1, PARALLEL - 1]


@pytest.mark.fault
def test_a_database_outage_is_answered_503_and_the_retried_event_is_recorded_once(stripe_connection, click):
    proxy = FaultProxy(database_upstream())
    settings = db.settings_dict
    url = f"postgres://{settings['USER']}@127.0.0.1:{proxy.port}/{settings['NAME']}"
    event = stripe_event(
        "checkout.session.completed",
        checkout_session(mode="payment", amount=900, click_id=click.click_id, payment_intent=sid("pi")),
    )
    try:
        with running_gunicorn(database=url, REQUEST_DEADLINE="2", DB_CONNECT_TIMEOUT="2", CONN_MAX_AGE="60") as (
            base,
            _,
        ):
            hook = f"{base}/hooks/payments/{stripe_connection.url_token}"
            warm = post(hook, *stripe_signed(stripe_event("customer.created", {"id": sid("cus")})))
            assert warm.json()["outcome"] == "ignored"  # a kept connection through the proxy
            for fault, restore in ((proxy.kill, proxy.revive), (proxy.freeze, proxy.thaw)):
                fault()
                try:
                    started = time.monotonic()
                    down = post(hook, *stripe_signed(event))  # Stripe signs each attempt anew
                    assert (down.status_code, down.json()) == (503, {"error": "service unavailable"})
                    assert down.headers["Retry-After"] == "5" and time.monotonic() - started < 4
                finally:
                    restore()
                time.sleep(1)  # whatever the frozen proxy held has reached PostgreSQL by now
                assert ConversionEvent.objects.count() == 0  # the failed attempt committed nothing
            retried = post(hook, *stripe_signed(event))
            assert (retried.status_code, retried.json()["outcome"]) == (200, "sale")
            assert post(hook, *stripe_signed(event)).json()["outcome"] == "duplicate"
    finally:
        proxy.close()
    assert ConversionEvent.objects.count() == 1
    assert Delivery.objects.filter(event_id=event["id"]).count() == 1
